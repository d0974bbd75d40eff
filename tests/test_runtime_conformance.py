from __future__ import annotations

import pytest

from assay._internal.runtime.conformance import CHECKS
from assay._internal.runtime.fake import FakeRuntime


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_fake_conforms(check) -> None:  # type: ignore[no-untyped-def]
    check(FakeRuntime(), "fake-image")


@pytest.mark.docker
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_docker_conforms(check, docker_runtime, base_image) -> None:  # type: ignore[no-untyped-def]
    check(docker_runtime, base_image)

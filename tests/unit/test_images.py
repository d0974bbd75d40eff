from __future__ import annotations

from dataclasses import dataclass, field

import docker.errors
import pytest
import requests.exceptions

from assay._internal.runtime.images import DEFAULT_BASE_IMAGE, SETUP_FIX, ensure_image_present
from assay.errors import EngineUnavailableError, InfrastructureError

IMAGE_ID = "sha256:" + "ab" * 32


@dataclass
class FakeImage:
    id: object


@dataclass
class FakeImages:
    known: dict[str, object] = field(default_factory=dict)
    error: Exception | None = None
    asked: list[str] = field(default_factory=list)

    def get(self, name: str) -> FakeImage:
        self.asked.append(name)
        if self.error is not None:
            raise self.error
        if name not in self.known:
            raise docker.errors.ImageNotFound(f"No such image: {name}")
        return FakeImage(self.known[name])


@dataclass
class FakeClient:
    images: FakeImages


def test_present_image_returns_its_id() -> None:
    client = FakeClient(FakeImages(known={DEFAULT_BASE_IMAGE: IMAGE_ID}))
    assert ensure_image_present(client, DEFAULT_BASE_IMAGE) == IMAGE_ID
    assert client.images.asked == [DEFAULT_BASE_IMAGE]


def test_missing_own_image_says_run_setup() -> None:
    client = FakeClient(FakeImages(known={"assay-base:other": IMAGE_ID}))
    with pytest.raises(InfrastructureError) as info:
        ensure_image_present(client, DEFAULT_BASE_IMAGE)
    err = info.value
    assert err.exit_code == 3
    assert err.fix == SETUP_FIX
    assert "scripts/setup.sh" in err.diagnostics()
    assert DEFAULT_BASE_IMAGE in str(err)


def test_missing_foreign_image_says_pull_not_setup() -> None:
    client = FakeClient(FakeImages())
    with pytest.raises(InfrastructureError) as info:
        ensure_image_present(client, "python:3.12-slim")
    assert info.value.fix is not None
    assert "docker pull python:3.12-slim" in info.value.fix


def test_unreachable_engine_is_engine_unavailable() -> None:
    client = FakeClient(FakeImages(error=requests.exceptions.ConnectionError("refused")))
    with pytest.raises(EngineUnavailableError) as info:
        ensure_image_present(client, DEFAULT_BASE_IMAGE)
    assert info.value.exit_code == 3
    assert "scripts/setup.sh" in info.value.diagnostics()


def test_engine_api_error_is_infrastructure_error_with_capped_message() -> None:
    client = FakeClient(FakeImages(error=docker.errors.APIError("x" * 10_000)))
    with pytest.raises(InfrastructureError) as info:
        ensure_image_present(client, DEFAULT_BASE_IMAGE)
    assert not isinstance(info.value, EngineUnavailableError)
    assert len(str(info.value)) < 500


@pytest.mark.parametrize("bad_id", [None, "", "abc", 123])
def test_engine_answer_without_a_usable_id_fails_closed(bad_id: object) -> None:
    client = FakeClient(FakeImages(known={DEFAULT_BASE_IMAGE: bad_id}))
    with pytest.raises(InfrastructureError):
        ensure_image_present(client, DEFAULT_BASE_IMAGE)

"""The languages' images without an engine: their names, reuse, build and refusals against the
fake docker-py client of test_environment.py (the real builds: tests/docker/test_languages.py)."""

from __future__ import annotations

from typing import Any

import pytest
from test_environment import GOOD_STREAM, FakeClient, FakeImage

from assay._internal.environment import build as env_build
from assay._internal.environment import languages as images
from assay._internal.environment.languages import ensure_all, ensure_language_image, language_ref
from assay._internal.model.languages import ALL_LANGUAGES
from assay.errors import EnvironmentBuildError, TaskEnvironmentError, UsageError

BUILT = GOOD_STREAM[-1]["aux"]["ID"]


@pytest.fixture(autouse=True)
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Stands in for running python3 in the built image: records the code, answers 0."""
    seen: list[str] = []

    def status(client: Any, image_id: str, code: str) -> int:
        seen.append(code)
        return 0

    monkeypatch.setattr(env_build, "_python_status", status)
    return seen


def test_the_name_follows_the_recipe_and_the_base_image() -> None:
    client = FakeClient(GOOD_STREAM)
    ref = language_ref(client, "c")
    assert ref.startswith("assay-lang-c:") and len(ref.split(":")[1]) == images.HASH_CHARS
    assert language_ref(client, "cpp") != ref.replace("-c:", "-cpp:")
    client.store["assay-base:latest"] = FakeImage("sha256:" + "1" * 64)
    assert language_ref(client, "c") != ref


def test_build_once_then_reuse(checks: list[str]) -> None:
    client = FakeClient(GOOD_STREAM)
    first = ensure_language_image(client, "rust")
    assert first.built and first.image_id == BUILT and first.ref == language_ref(client, "rust")
    (call,) = client.builds
    assert call["pull"] is False and call["labels"][images.LANGUAGE_LABEL] == "rust"
    assert call["labels"][env_build.BASES_LABEL] == "assay-base:latest=sha256:" + "0" * 64
    assert "'rustc'" in checks[0] and "3, 11" in checks[0]
    # The content-addressed name, and the name gradings run (moved to each current build).
    assert client.get(BUILT).tags == [first.ref, "assay-lang-rust:latest"]
    again = ensure_language_image(client, "rust", build=False)
    assert not again.built and again.ref == first.ref and len(client.builds) == 1


def test_the_dockerfile_installs_the_packages_without_recommends() -> None:
    text = images.dockerfile("java")
    assert text.startswith("FROM assay-base:latest\n")
    assert "apt-get install -y --no-install-recommends default-jdk-headless" in text
    assert "rm -rf /var/lib/apt/lists/*" in text
    assert images.dockerfile("python3") == "FROM assay-base:latest\n"


def test_not_built_without_build_names_the_command() -> None:
    with pytest.raises(TaskEnvironmentError, match="not built") as err:
        ensure_language_image(FakeClient(GOOD_STREAM), "go", build=False)
    assert err.value.fix is not None and "assay build --languages go" in err.value.fix


def test_a_missing_base_image_is_refused_before_any_build() -> None:
    client = FakeClient(GOOD_STREAM)
    del client.store["assay-base:latest"]
    with pytest.raises(TaskEnvironmentError, match="assay-base:latest") as err:
        ensure_language_image(client, "c")
    assert err.value.fix is not None and "setup.sh" in err.value.fix and client.builds == []


def test_a_failing_build_raises_with_the_log_tail() -> None:
    client = FakeClient([{"stream": "E: Unable to locate package gcc\n"}, {"error": "exit 100"}])
    with pytest.raises(EnvironmentBuildError) as err:
        ensure_language_image(client, "c")
    assert "Unable to locate package gcc" in err.value.log_tail
    assert err.value.fix is not None and "assay build --languages c" in err.value.fix


def test_an_image_without_the_toolchain_is_not_tagged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(env_build, "_python_status", lambda *a: 3)
    client = FakeClient(GOOD_STREAM)
    with pytest.raises(TaskEnvironmentError, match="language image lacks"):
        ensure_language_image(client, "java")
    assert client.removed == [BUILT] and client.get(BUILT).tags == []


def test_ensure_all_checks_every_name_first() -> None:
    client = FakeClient(GOOD_STREAM)
    with pytest.raises(UsageError, match="unknown language 'cobol'"):
        ensure_all(client, ["c", "cobol"])
    assert client.builds == []
    done: list[str] = []
    found = ensure_all(client, done=lambda image: done.append(image.language))
    assert [i.language for i in found] == done == list(ALL_LANGUAGES)

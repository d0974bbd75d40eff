"""`[environment]` without an engine: the model, the Dockerfile's base images, the build
context and its digest, and `ensure_environment` against a fake docker-py client."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from assay._internal.environment import build as env_build
from assay._internal.environment.build import BASES_LABEL, ensure_environment
from assay._internal.environment.dockerfile import DockerfileError, base_images
from assay._internal.model.envcontext import context_digest, environment_ref, write_context
from assay._internal.model.task import Task, load_task
from assay._internal.runtime.fake import FakeRuntime
from assay._internal.tiers.core.controller import task_image
from assay.errors import EnvironmentBuildError, TaskEnvironmentError, TaskError

DOCKERFILE = "FROM assay-base:latest\nRUN true\n"
IMAGE = "sha256:" + "ab" * 32


def make_task(tmp: Path, env: str, dockerfile: str | None = DOCKERFILE) -> Path:
    root = tmp / "t"
    (root / "inputs").mkdir(parents=True)
    (root / "judge").mkdir()
    (root / "judge" / "cases.json").write_text('[{"id": "a", "input": [1], "expected": 1}]')
    (root / "judge" / "secret.txt").write_text("the answer")
    if dockerfile is not None:
        (root / "environment").mkdir()
        (root / "environment" / "Dockerfile").write_text(dockerfile)
    (root / "task.toml").write_text(
        'id = "t"\nkind = "function"\nartifacts = ["s.py"]\n[function]\nentry = "s:f"\n'
        f'[judge]\ncases = "cases.json"\n[environment]\n{env}\n'
    )
    return root


def dockerfile_task(tmp: Path, dockerfile: str = DOCKERFILE) -> Task:
    return load_task(make_task(tmp, 'dockerfile = "environment/Dockerfile"', dockerfile))


# -- the model ----------------------------------------------------------------------------


def test_no_environment_means_the_base_image_and_workspace() -> None:
    task = load_task(Path(__file__).resolve().parents[2] / "examples" / "add")
    assert task.environment is None and task.workdir == "/workspace"
    assert environment_ref(task) is None
    assert task_image(FakeRuntime(), task, "assay-base:latest") == "assay-base:latest"


def test_dockerfile_and_workdir_parse(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path, 'dockerfile = "environment/Dockerfile"\nworkdir = "/app"'))
    assert task.environment is not None and task.environment.dockerfile == "environment/Dockerfile"
    assert task.workdir == "/app"
    assert task.build_context == task.root / "environment"


def test_pinned_image_is_its_own_reference(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path, f'image = "myenv@{IMAGE}"', dockerfile=None))
    assert environment_ref(task) == f"myenv@{IMAGE}"
    assert task.build_context is None


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ("", "exactly one of environment.dockerfile and environment.image"),
        (f'dockerfile = "environment/Dockerfile"\nimage = "{IMAGE}"', "exactly one"),
        ('image = "python:3.12-slim"', "environment.image"),  # a tag is not pinned
        (
            'dockerfile = "environment/Dockerfile"\nflavour = "x"',
            "unknown key 'environment.flavour'",
        ),
        ('dockerfile = "environment/Dockerfile"\nworkdir = "app"', "environment.workdir"),
        ('dockerfile = "environment/Dockerfile"\nworkdir = "/app/../etc"', "no . or .."),
        ('dockerfile = "environment/Dockerfile"\nworkdir = "/"', "absolute path below /"),
        ('dockerfile = "/etc/Dockerfile"', "inside it"),
        ('dockerfile = "../environment/Dockerfile"', "inside it"),
        ('dockerfile = "Dockerfile"', "must be in a subdirectory"),
        ('dockerfile = "judge/Dockerfile"', "may not be under judge/"),
        ('dockerfile = "solutions/env/Dockerfile"', "may not be under solutions/"),
        ('dockerfile = "environment/Nope"', "does not exist"),
    ],
)
def test_bad_environment_is_refused_naming_the_field(
    tmp_path: Path, env: str, message: str
) -> None:
    with pytest.raises(TaskError) as err:
        load_task(make_task(tmp_path, env))
    assert message in str(err.value)
    assert "task.toml" in str(err.value) and err.value.exit_code == 2


def test_a_linked_environment_directory_is_refused(tmp_path: Path) -> None:
    root = make_task(tmp_path, 'dockerfile = "env/Dockerfile"')
    os.symlink(root / "judge", root / "env")  # env/ -> judge/: the judge as build context
    (root / "judge" / "Dockerfile").write_text(DOCKERFILE)
    with pytest.raises(TaskError, match="symbolic link"):
        load_task(root)


# -- the Dockerfile's base images ---------------------------------------------------------


def refs(text: str) -> list[str]:
    return [b.ref for b in base_images(text)]


def test_from_lines_with_global_args_and_stages() -> None:
    text = (
        "# escape=\\\n"
        "ARG BASE=assay-base\nARG TAG\n"
        "FROM ${BASE}:${TAG:-latest} AS build\n"
        "RUN make \\\n  # a comment inside a continuation\n  all\n"
        "FROM --platform=linux/amd64 build AS again\n"
        "FROM scratch\n"
        "COPY --from=build /out /out\n"
        "COPY --from=0 /x /x\n"
        "COPY --chown=1:1 --from=tools:1 /bin/tool /tool\n"
        "from $BASE:other\n"
    )
    assert refs(text) == ["assay-base:latest", "tools:1", "assay-base:other"]
    assert [b.line for b in base_images(text)] == [4, 12, 13]


def test_stage_names_do_not_count_only_after_they_are_defined() -> None:
    # `FROM build` before a stage named build is an image called build
    assert refs("FROM build\nFROM x AS build\nFROM build\n") == ["build", "x"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("RUN true\n", "before the first FROM"),
        ("# only a comment\n", "no FROM"),
        ("FROM\n", "names no image"),
        ("ARG X\nFROM $X\n", "names no image"),
        ("FROM a b c d\n", "AS name"),
    ],
)
def test_unreadable_dockerfiles(text: str, message: str) -> None:
    with pytest.raises(DockerfileError, match=message):
        base_images(text)


# -- the build context --------------------------------------------------------------------


def context_names(task: Task) -> dict[str, tarfile.TarInfo]:
    buf = io.BytesIO()
    write_context(task, buf)
    buf.seek(0)
    with tarfile.open(fileobj=buf) as tar:
        return {m.name: m for m in tar.getmembers()}


def test_the_context_is_the_environment_directory_and_never_judge(tmp_path: Path) -> None:
    task = dockerfile_task(tmp_path)
    env = task.root / "environment"
    (env / "files").mkdir()
    (env / "files" / "run.sh").write_text("#!/bin/sh\n")
    (env / "files" / "run.sh").chmod(0o700)
    os.symlink("../../judge/secret.txt", env / "files" / "leak")
    names = context_names(task)
    assert sorted(names) == ["Dockerfile", "files", "files/leak", "files/run.sh"]
    assert not any("secret" in n or n.startswith("judge") for n in names)
    leak = names["files/leak"]
    assert leak.issym() and leak.linkname == "../../judge/secret.txt" and leak.size == 0
    assert names["files/run.sh"].mode == 0o755 and names["Dockerfile"].mode == 0o644
    assert {(m.uid, m.gid, m.mtime) for m in names.values()} == {(0, 0, 0)}


def test_the_digest_follows_content_not_times(tmp_path: Path) -> None:
    task = dockerfile_task(tmp_path)
    first = context_digest(task)
    dockerfile = task.root / "environment" / "Dockerfile"
    os.utime(dockerfile, (1, 1))
    (task.root / "judge" / "secret.txt").write_text("another answer")  # not in the context
    assert context_digest(task) == first
    assert environment_ref(task) == f"assay-env:{first.removeprefix('sha256:')[:24]}"
    dockerfile.write_text(DOCKERFILE + "RUN echo changed\n")
    assert context_digest(task) != first
    second = context_digest(task)
    dockerfile.chmod(0o755)
    assert context_digest(task) != second


def test_a_fifo_in_the_context_is_refused(tmp_path: Path) -> None:
    task = dockerfile_task(tmp_path)
    os.mkfifo(task.root / "environment" / "pipe")
    with pytest.raises(TaskError, match="files, directories and links only"):
        context_digest(task)


# -- ensure_environment against a fake engine ---------------------------------------------


class FakeImage:
    def __init__(self, image_id: str, labels: dict[str, str] | None = None) -> None:
        self.id = image_id
        self.attrs = {"Config": {"Labels": labels or {}}}
        self.tags: list[str] = []

    def tag(self, repo: str, tag: str) -> None:
        self.tags.append(f"{repo}:{tag}")


class FakeClient:
    """images.get/remove and api.build (a scripted stream)."""

    def __init__(self, stream: list[dict[str, Any]]) -> None:
        self.store: dict[str, FakeImage] = {"assay-base:latest": FakeImage("sha256:" + "0" * 64)}
        self.stream = stream
        self.builds: list[dict[str, Any]] = []
        self.removed: list[str] = []
        self.images = self
        self.api = self

    def get(self, ref: str) -> FakeImage:
        for image in self.store.values():
            if ref in image.tags or ref == image.id:
                return image
        if ref in self.store:
            return self.store[ref]
        raise docker.errors.ImageNotFound(ref)

    def remove(self, image_id: str, noprune: bool) -> None:
        self.removed.append(image_id)

    def build(self, **kwargs: Any) -> list[dict[str, Any]]:
        self.builds.append(kwargs)
        for chunk in self.stream:
            if "aux" in chunk:
                self.store[chunk["aux"]["ID"]] = FakeImage(chunk["aux"]["ID"], kwargs["labels"])
        return self.stream


BUILT = "sha256:" + "c" * 64
GOOD_STREAM = [{"stream": "Step 1/2 : FROM assay-base:latest\n"}, {"aux": {"ID": BUILT}}]


class PythonCheck:
    """Stands in for running python3 in the image (the real check runs on the engine in
    tests/docker/test_environment_docker.py): records the calls, answers `status`."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.status = 0

    def __call__(self, client: Any, image_id: str, code: str) -> int:
        self.calls.append((image_id, code))
        return self.status


@pytest.fixture(autouse=True)
def python_check(monkeypatch: pytest.MonkeyPatch) -> PythonCheck:
    env_build._checked.clear()
    check = PythonCheck()
    monkeypatch.setattr(env_build, "_python_status", check)
    return check


def test_build_then_cache_hit_without_a_second_build(
    tmp_path: Path, python_check: PythonCheck
) -> None:
    task = dockerfile_task(tmp_path)
    client = FakeClient(GOOD_STREAM)
    first = ensure_environment(client, task)
    assert first is not None and first.built and first.image_id == BUILT
    assert first.ref == environment_ref(task) and first.workdir == "/workspace"
    (call,) = client.builds
    assert call["pull"] is False and call["custom_context"] is True
    assert call["labels"]["assay.env.context"] == context_digest(task)
    assert call["labels"][BASES_LABEL] == "assay-base:latest=sha256:" + "0" * 64
    assert python_check.calls == [(BUILT, env_build.PYTHON_CHECK[0])]
    again = ensure_environment(client, task)
    assert again is not None and not again.built and again.image_id == BUILT
    assert len(client.builds) == 1


def test_a_changed_base_image_rebuilds(tmp_path: Path) -> None:
    task = dockerfile_task(tmp_path)
    client = FakeClient(GOOD_STREAM)
    ensure_environment(client, task)
    client.store["assay-base:latest"] = FakeImage("sha256:" + "1" * 64)
    with pytest.raises(TaskEnvironmentError, match="base image changed") as err:
        ensure_environment(client, task, build=False)
    assert err.value.fix is not None and "assay build" in err.value.fix
    assert ensure_environment(client, task) is not None and len(client.builds) == 2


def test_a_missing_base_is_refused_before_any_build(tmp_path: Path) -> None:
    task = dockerfile_task(tmp_path, "ARG V=3\nFROM nowhere/thing:$V\n")
    client = FakeClient(GOOD_STREAM)
    with pytest.raises(TaskEnvironmentError) as err:
        ensure_environment(client, task)
    assert "'nowhere/thing:3'" in str(err.value) and "line 2" in str(err.value)
    assert "never pulls" in err.value.diagnostics()
    assert client.builds == [] and err.value.exit_code == 2


def test_a_failing_build_carries_its_log_tail(tmp_path: Path) -> None:
    task = dockerfile_task(tmp_path)
    lines = [{"stream": f"line {n}\n"} for n in range(100)]
    client = FakeClient([*lines, {"error": "The command '/bin/sh -c false' returned 1"}])
    with pytest.raises(EnvironmentBuildError) as err:
        ensure_environment(client, task)
    text = err.value.diagnostics()
    assert "returned 1" in text and "line 99" in text and "line 50\n" not in text
    assert err.value.exit_code == 2 and "Dockerfile" in str(err.value)


def test_an_image_without_python_is_refused_and_not_tagged(
    tmp_path: Path, python_check: PythonCheck
) -> None:
    task = dockerfile_task(tmp_path)
    client = FakeClient(GOOD_STREAM)
    python_check.status = 127
    with pytest.raises(TaskEnvironmentError, match=r"python3 >= 3\.11"):
        ensure_environment(client, task)
    assert client.store[BUILT].tags == [] and client.removed == [BUILT]


def test_a_missing_pinned_image_names_the_image(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path, f'image = "{IMAGE}"', dockerfile=None))
    with pytest.raises(TaskEnvironmentError) as err:
        ensure_environment(FakeClient([]), task)
    assert IMAGE in str(err.value) and "assay build" in err.value.diagnostics()


def test_without_build_a_missing_image_names_assay_build(tmp_path: Path) -> None:
    task = dockerfile_task(tmp_path)
    client = FakeClient(GOOD_STREAM)
    with pytest.raises(TaskEnvironmentError) as err:
        ensure_environment(client, task, build=False)
    assert err.value.fix == f"assay build {task.root}" and client.builds == []


def test_the_seeded_workdir_is_the_agents_without_set_id_bits_or_devices() -> None:
    from assay._internal.tiers.core.seed import _owned_by_agent

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, kind, mode in [
            ("app", tarfile.DIRTYPE, 0o755),
            ("app/bin", tarfile.REGTYPE, 0o4755),
            ("app/dev", tarfile.CHRTYPE, 0o666),
            ("app/fifo", tarfile.FIFOTYPE, 0o666),
            ("other/x", tarfile.REGTYPE, 0o644),
        ]:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.uid = kind, mode, 0
            data = b"#!bin" if name == "app/bin" else b""
            info.size = len(data) if kind == tarfile.REGTYPE else 0
            tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
        link = tarfile.TarInfo("app/hard")
        link.type, link.linkname = tarfile.LNKTYPE, "app/bin"
        tar.addfile(link)
        escaping = tarfile.TarInfo("app/hard-out")
        escaping.type, escaping.linkname = tarfile.LNKTYPE, "other/x"
        tar.addfile(escaping)
    raw.seek(0)
    data, count = _owned_by_agent(raw, "app")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = {m.name: m for m in tar.getmembers()}
        hard = tar.extractfile("hard")
        assert hard is not None and hard.read() == b"#!bin"
    assert count == 2 and sorted(members) == ["bin", "hard"]
    assert members["bin"].mode == 0o755 and members["bin"].uid == members["bin"].gid == 1000
    # A second name of a file becomes a copy: the agent's workspace crosses the firewall.
    assert members["hard"].isreg() and members["hard"].size == 5

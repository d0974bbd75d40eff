"""The scanner behind "the key never enters a container" must itself be shown to find leaks:
each test plants a secret through one channel and checks that exactly that channel reports it."""

from __future__ import annotations

import io
import secrets
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from helpers.keyscan import key_needles, scan_container_for_secret

from assay._internal.signing.sign import generate_keypair


def _needle(tag: str) -> bytes:
    return f"{tag}-{secrets.token_hex(12)}".encode()


@pytest.fixture(scope="module")
def client() -> Any:
    return docker.from_env(version="auto")


@pytest.fixture
def grading_id() -> str:
    return f"keyscan-{secrets.token_hex(6)}"


@pytest.fixture
def make_container(client: Any, base_image: str, grading_id: str) -> Iterator[Any]:
    created: list[Any] = []

    def make(**kwargs: Any) -> Any:
        kwargs.setdefault("command", ["sleep", "300"])
        container = client.containers.create(
            base_image, labels={"assay.grading": grading_id}, **kwargs
        )
        created.append(container)
        container.start()
        return container

    yield make
    for container in created:
        container.remove(force=True)


def _tar(name: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.mark.docker
def test_a_clean_container_has_no_findings(make_container: Any) -> None:
    container = make_container()
    container.exec_run(["sh", "-c", "echo hello > /tmp/ordinary"])
    assert scan_container_for_secret(container, [_needle("absent"), _needle("absent")]) == []


@pytest.mark.docker
def test_every_channel_is_scanned(make_container: Any, tmp_path: Path) -> None:
    env, cmd, path, file, mount, exe, absent = (
        _needle(t) for t in ("env", "cmd", "path", "file", "mount", "exec", "absent")
    )
    host_dir = tmp_path / f"keys-{path.decode()}"
    host_dir.mkdir()
    (host_dir / "data.txt").write_bytes(b"prefix " + mount + b" suffix")
    container = make_container(
        command=["sh", "-c", "sleep 300", cmd.decode()],
        environment={"HARMLESS": env.decode()},
        volumes={str(host_dir): {"bind": "/data", "mode": "ro"}},
    )
    assert container.put_archive("/tmp", _tar("planted.txt", b"x" * 1000 + file))
    container.exec_run(["sh", "-c", "true", exe.decode()])

    findings = scan_container_for_secret(container, [env, cmd, path, file, mount, exe, absent])

    expected = {
        "env: needle 0 in Config.Env",
        "command: needle 1 in Path/Args",
        "process: needle 1 in top",
        "mounts: needle 2 in Mounts/Binds/Tmpfs",
        "filesystem: needle 3 in /tmp",
        "mount-content: needle 4 in /data",
    }
    assert expected <= set(findings), findings
    assert "exec: needle 5 in events" in findings, findings
    assert not any("needle 6" in f for f in findings), findings


@pytest.mark.docker
def test_a_leaked_key_file_is_found_after_the_container_stopped(
    make_container: Any, tmp_path: Path
) -> None:
    key_path, _ = generate_keypair(tmp_path / "k")
    container = make_container()
    container.put_archive("/root", _tar("stolen.pem", key_path.read_bytes()))
    container.kill()
    findings = scan_container_for_secret(container, key_needles(key_path))
    assert "filesystem: needle 0 in /root" in findings, findings
    assert "filesystem: needle 1 in /root" in findings, findings


@pytest.mark.docker
def test_a_symlink_to_the_key_path_is_found(make_container: Any, tmp_path: Path) -> None:
    key_path, _ = generate_keypair(tmp_path / "k")
    container = make_container()
    container.exec_run(["ln", "-s", str(key_path), "/tmp/innocent"])
    findings = scan_container_for_secret(container, key_needles(key_path))
    assert any(f.startswith("filesystem: needle 6 in /tmp") for f in findings), findings

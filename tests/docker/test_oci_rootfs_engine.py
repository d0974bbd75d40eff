"""The runc backend's image cache on the real engine: the base image unpacks to the tree the
engine's own containers see, and a derived image's whiteouts are applied."""

from __future__ import annotations

import io
import os
import stat
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay._internal.runtime.docker import connect
from assay._internal.runtime.oci.rootfs import RootfsCache


@pytest.fixture(scope="module")
def client() -> Any:
    return connect(timeout=300)


def test_the_base_image_unpacks_once(client: Any, base_image: str, tmp_path: Path) -> None:
    root = tmp_path / "images"
    cache = RootfsCache(client, root)
    started = time.monotonic()
    image_id, path = cache.rootfs(base_image)
    took = time.monotonic() - started
    print(f"unpacked {base_image} in {took:.1f} s")
    assert image_id == client.images.get(base_image).id
    assert path == root / image_id.removeprefix("sha256:") / "rootfs"
    python = path / "usr/bin/python3"
    assert os.path.lexists(python)
    target = os.readlink(python) if python.is_symlink() else python.name
    assert not os.path.isabs(target)  # so the check below stays inside the tree
    assert (python.parent / target).is_file()
    passwd = os.stat(path / "usr/bin/passwd")
    assert stat.S_IMODE(passwd.st_mode) & stat.S_ISUID
    assert (os.stat(path).st_uid, stat.S_IMODE(os.stat(path).st_mode)) == (0, 0o755)
    cache.verify(image_id)

    started = time.monotonic()
    assert cache.rootfs(base_image) == (image_id, path)
    assert time.monotonic() - started < 0.5
    started = time.monotonic()
    assert RootfsCache(client, root).rootfs(base_image) == (image_id, path)
    assert time.monotonic() - started < 0.5


@pytest.fixture
def derived(client: Any, base_image: str) -> Iterator[str]:
    """An image whose one layer removes a base file (a whiteout) and replaces a base
    directory (an opaque one)."""
    tag = f"assay-test-rootfs:{uuid.uuid4().hex[:12]}"
    dockerfile = (
        f"FROM {base_image}\n"
        "RUN rm /etc/debian_version && mkdir /x && echo hi > /x/f"
        " && rm -rf /etc/apt && mkdir /etc/apt && echo new > /etc/apt/only\n"
    )
    client.images.build(
        fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True, forcerm=True, network_mode="none"
    )
    try:
        yield tag
    finally:
        client.images.remove(tag, force=True)


def test_a_derived_images_whiteouts_apply(client: Any, derived: str, tmp_path: Path) -> None:
    image_id, path = RootfsCache(client, tmp_path / "images").rootfs(derived)
    assert image_id == client.images.get(derived).id
    assert len(client.images.get(derived).attrs["RootFS"]["Layers"]) == 2
    assert not os.path.lexists(path / "etc/debian_version")
    assert (path / "etc/passwd").is_file()  # the base is still there
    assert (path / "x/f").read_text() == "hi\n"
    assert os.listdir(path / "etc/apt") == ["only"]
    assert not [n for _, ds, fs in os.walk(path) for n in ds + fs if n.startswith(".wh.")]

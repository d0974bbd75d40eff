"""The runc backend's state on disk outlives a controller killed with SIGKILL: whatever moment
the kill lands, what is left is something `gc` can attribute and remove, and `gc` never removes
what a live controller is still making. The kills here are real (a forked child SIGKILLs
itself at the named step); the state root is a temp dir."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from assay._internal.runtime.oci import gc, host
from assay._internal.runtime.oci.client import Client
from assay._internal.runtime.oci.host import Meta
from assay._internal.runtime.owner import this_owner, this_process


def _meta(cid: str, image_id: str = "") -> Meta:
    return Meta(
        cid=cid, grading_id="g-1", role="candidate", owner=this_owner(), exec_user="1000:1000",
        hardened=True, switch_user=False, workdir="/", env={}, mounts={}, read_only=[],
        read_only_root=True, image_id=image_id,
    )  # fmt: skip


def _killed_at(
    step: str, action: Callable[[], None], monkeypatch: pytest.MonkeyPatch, on: str = ""
) -> None:
    """Run `action` in a forked child that SIGKILLs itself when it calls `os.<step>` on a
    path ending with `on`."""
    real = getattr(os, step)

    def kill_or_do(path: object, *a: object, **k: object) -> object:
        if str(path).endswith(on):
            os.kill(os.getpid(), signal.SIGKILL)
        return real(path, *a, **k)

    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            monkeypatch.setattr(os, step, kill_or_do)
            action()
        finally:
            os._exit(99)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "c").mkdir()
    # The host's cgroups are the machine's, not this state root's: an engine test's live
    # container beside this one (xdist) would be listed by `gc.leftovers` otherwise.
    monkeypatch.setattr(host, "CGROUP_PARENT", f"assay-unit-none-{uuid.uuid4().hex}")
    return tmp_path


def _sweep(root: Path) -> int:
    return gc.sweep_stale_state(root, Client("runc", root / "runc"))


def test_a_container_directory_appears_with_its_whole_meta(root: Path) -> None:
    cid = uuid.uuid4().hex
    host.make_state_dir(host.state_dir(cid, root), _meta(cid))
    assert list(host.all_metas(root)) == [_meta(cid)]
    assert host.staged(root) == []


def test_a_maker_killed_before_its_container_had_a_name_leaves_a_staging_dir_gc_removes(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid = uuid.uuid4().hex
    _killed_at("rename", lambda: host.make_state_dir(host.state_dir(cid, root), _meta(cid)),
               monkeypatch)  # fmt: skip
    [(d, dead)] = host.staged(root)
    assert d.name.endswith(cid) and dead is True
    assert list(host.all_metas(root)) == []  # not a container: nothing of it was started
    assert gc.images_in_use(root) == set()  # so it holds no image's tree either
    assert gc.leftovers(root) == [f"staging:{d.name}"]
    assert _sweep(root) == 1
    assert gc.leftovers(root) == [] and list((root / "c").iterdir()) == []


def test_a_live_makers_staging_dir_is_spared(root: Path) -> None:
    d = root / "c" / f"{host.STAGING}{this_process()}.{uuid.uuid4().hex}"
    d.mkdir()
    assert host.staged(root) == [(d, False)]
    assert _sweep(root) == 0 and d.is_dir()


def test_a_staging_name_no_maker_made_is_listed_never_removed(root: Path) -> None:
    d = root / "c" / f"{host.STAGING}planted"
    d.mkdir()
    assert host.staged(root) == [(d, None)]
    assert _sweep(root) == 0 and d.is_dir()
    assert gc.leftovers(root) == [f"staging:{d.name}"]


def test_a_removal_killed_anywhere_leaves_an_attributable_or_empty_directory(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid = uuid.uuid4().hex
    d = host.state_dir(cid, root)
    host.make_state_dir(d, _meta(cid))
    (d / "config.json").write_text("{}")
    (d / "tmp" / "sub").mkdir(parents=True)
    # Killed before the meta goes: everything else is gone, the meta still names its owner.
    _killed_at("unlink", lambda: host.remove_state_dir(d), monkeypatch, on="meta.json")
    assert sorted(p.name for p in d.iterdir()) == ["meta.json"]
    assert list(host.all_metas(root)) == [_meta(cid)]
    # Killed at the very last step: an empty directory, which `gc` may remove at any time.
    _killed_at("rmdir", lambda: host.remove_state_dir(d), monkeypatch)
    assert list(d.iterdir()) == [] and list(host.all_metas(root)) == [cid]
    assert _sweep(root) == 1 and not d.exists()


def test_a_directory_with_content_and_no_meta_is_left_for_gc_all(root: Path) -> None:
    """No version of `make_state_dir` makes one; an older version's half-made container is
    removed by id (`assay gc --all`), never guessed at beside running gradings."""
    d = root / "c" / uuid.uuid4().hex
    (d / "tmp").mkdir(parents=True)
    assert _sweep(root) == 0 and d.is_dir()
    assert gc.leftovers(root) == [f"container:{d.name[:12]}"]


def test_the_images_in_use_are_those_of_every_container_made_or_being_made(root: Path) -> None:
    """`assay gc` keeps the unpacked tree of every image a container here is made of; when one
    cannot say which (an older assay's meta, or one whose maker is still writing it), no tree
    is known to be free."""
    assert gc.images_in_use(root) == set()
    a, b = uuid.uuid4().hex, uuid.uuid4().hex
    host.make_state_dir(host.state_dir(a, root), _meta(a, "sha256:" + "a" * 64))
    staging = root / "c" / f"{host.STAGING}{this_process()}.{b}"
    staging.mkdir()
    assert gc.images_in_use(root) is None  # its maker is alive and has not written the meta
    (staging / "meta.json").write_text(_meta(b, "sha256:" + "b" * 64).to_json())
    assert gc.images_in_use(root) == {"sha256:" + "a" * 64, "sha256:" + "b" * 64}
    old = uuid.uuid4().hex
    host.make_state_dir(host.state_dir(old, root), _meta(old))
    assert gc.images_in_use(root) is None
    host.remove_state_dir(host.state_dir(old, root))
    (root / "c" / "unreadable").mkdir()
    assert gc.images_in_use(root) is None

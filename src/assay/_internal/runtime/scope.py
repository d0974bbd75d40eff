"""Ownership of everything one grading creates, so that every exit path removes it all."""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from .base import ContainerSpec, Runtime

TEMP_PREFIX = "assay-"


def new_grading_id() -> str:
    """A fresh grading id: the label on its containers and the prefix of its temp dirs."""
    return "g-" + secrets.token_hex(8)


def grading_tempdir(grading_id: str, purpose: str) -> Path:
    """A new host temp dir of one grading, named after its id: a grading killed before its
    scope removed it leaves it to be found by that name (`grading_tempdirs`)."""
    return Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{grading_id}-{purpose}-"))


def grading_tempdirs(grading_id: str | None) -> list[Path]:
    """The paths on this host named as `grading_tempdir` names those of `grading_id` (of every
    grading when None: their ids start with "g-")."""
    pattern = f"{TEMP_PREFIX}g-*" if grading_id is None else f"{TEMP_PREFIX}{grading_id}-*"
    return sorted(Path(tempfile.gettempdir()).glob(pattern))


class GradingScope:
    """Creates containers and temp dirs for one grading and removes them on close.

    Removal runs on success, failure, timeout, exception and Ctrl-C: `close` finishes
    its sweep even if interrupted again, then re-raises the interrupt. Temp dirs are removed
    even when the engine cannot be reached to remove the containers (a restarted engine);
    the first error is raised after both steps.
    """

    def __init__(
        self,
        runtime: Runtime,
        grading_id: str,
        on_container: Callable[[ContainerSpec], object] | None = None,
    ) -> None:
        """`on_container`: told of every container created (a verdict records each role's
        image), including ones created by code that only sees the scope, such as the agent's."""
        self.runtime = runtime
        self.grading_id = grading_id
        self.on_container = on_container
        self._containers: list[str] = []
        self._dirs: list[Path] = []
        self._deferred: list[Callable[[], object]] = []

    def container(self, spec: ContainerSpec, start: bool = True) -> str:
        if spec.grading_id != self.grading_id:
            raise ValueError("container spec belongs to another grading")
        cid = self.runtime.create(spec)
        self._containers.append(cid)
        if self.on_container is not None:
            self.on_container(spec)
        if start:
            self.runtime.start(cid)
        return cid

    def discard(self, cid: str) -> None:
        """Remove one container now (a phase is over and nothing may outlive it). If that
        fails, `close` still finds it by its label."""
        try:
            self.runtime.remove(cid)
        finally:
            if cid in self._containers:
                self._containers.remove(cid)

    def tempdir(self, purpose: str) -> Path:
        path = grading_tempdir(self.grading_id, purpose)
        self._dirs.append(path)
        return path

    def defer(self, forget: Callable[[], object]) -> None:
        """Call `forget` at close, after the containers and temp dirs went: what a grading
        keeps outside the scope (the agent's decoy marker) goes with it on every exit path."""
        self._deferred.append(forget)

    def close(self) -> None:
        interrupted: BaseException | None = None
        failure: Exception | None = None
        for step in (self._remove_containers, self._remove_dirs, self._run_deferred):
            try:
                try:
                    step()
                except KeyboardInterrupt as exc:  # finish cleaning, then honour the interrupt
                    interrupted = exc
                    step()
            except Exception as exc:
                failure = failure or exc
        if interrupted is not None:
            raise interrupted
        if failure is not None:
            raise failure

    def _remove_containers(self) -> None:
        # One container that fails to go does not keep the others; the first failure is raised.
        failure: Exception | None = None
        while self._containers:
            try:
                self.runtime.remove(self._containers[-1])
            except Exception as exc:
                failure = failure or exc
            self._containers.pop()
        try:
            # Catches anything created under our label by a path that bypassed the list, and
            # asks once more for what failed above.
            self.runtime.sweep(self.grading_id)
        except Exception as exc:
            failure = failure or exc
        if failure is not None:
            raise failure

    def _run_deferred(self) -> None:
        while self._deferred:
            self._deferred.pop()()

    def _remove_dirs(self) -> None:
        while self._dirs:
            shutil.rmtree(self._dirs[-1], ignore_errors=True)
            self._dirs.pop()

    def __enter__(self) -> GradingScope:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

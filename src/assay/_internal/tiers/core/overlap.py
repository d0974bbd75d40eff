"""Run one step of a grading on a helper thread while the controller does the next one.

Container starts dominate a strict grading, and the judge's start does not depend on the
candidate's, so they overlap. The helper is always joined before the grading's scope closes,
even on Ctrl-C: a container it creates is in the scope by then, and is removed with the rest.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import Generic, TypeVar, cast

T = TypeVar("T")


class Background(Generic[T]):
    def __init__(self, fn: Callable[[], T]) -> None:
        self._fn = fn
        self._value: T | None = None
        self._exc: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._fn()
        except BaseException as exc:  # handed to the caller by result()
            self._exc = exc

    def join(self) -> None:
        """Wait for the helper; a Ctrl-C meanwhile is held until it is done, then re-raised."""
        interrupted: KeyboardInterrupt | None = None
        while self._thread.is_alive():
            try:
                self._thread.join()
            except KeyboardInterrupt as exc:
                interrupted = exc
        if interrupted is not None:
            raise interrupted

    def result(self) -> T:
        self.join()
        if self._exc is not None:
            raise self._exc
        return cast(T, self._value)

    def __enter__(self) -> Background[T]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.join()

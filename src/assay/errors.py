"""One exception hierarchy with one root; each error knows its exit code and explains itself."""

from __future__ import annotations


class AssayError(Exception):
    """Root of every error assay raises on purpose."""

    exit_code = 3

    def diagnostics(self) -> str:
        """A plain explanation for a person, with the fix where there is one."""
        return str(self)


class UsageError(AssayError):
    """The user asked for something that cannot be done as asked (exit 2)."""

    exit_code = 2


class TaskError(UsageError):
    """A task directory or its task.toml is invalid (exit 2)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


class InfrastructureError(AssayError):
    """Grading could not run to a verdict (exit 3): Docker missing, image missing, engine error."""

    exit_code = 3

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.fix = fix

    def diagnostics(self) -> str:
        return f"{self}\n  fix: {self.fix}" if self.fix else str(self)


class EngineUnavailable(InfrastructureError):
    """No Docker engine answers."""


class UnsafeInputs(TaskError):
    """The task's inputs would hand the agent something it must not see (exit 2).

    Raised by the hardened tiers only: the baselines model harnesses that never check."""

"""Every error assay raises on purpose: one root (`AssayError`), each with an exit code and a
`diagnostics()` that explains it to a person. Catch `AssayError` to catch them all.

Exit codes (the command line uses them as they are): 2 usage or task error, 3 no verdict could
be produced (infrastructure), 1 a verification failed. Exit 1 is the code of a FAILED grading
too, so no error but `VerificationError` ever takes it: an error is never read as a failed
verdict, nor a failed verdict as an error.
"""

from __future__ import annotations

__all__ = [
    "AnswerError",
    "ArchiveTooLargeError",
    "AssayError",
    "BackendUnavailableError",
    "CensusUnavailableError",
    "ClusterError",
    "ContainerStuckError",
    "EngineError",
    "EngineUnavailableError",
    "EnvironmentBuildError",
    "FirewallError",
    "GradingCancelledError",
    "ImageMissingError",
    "InfrastructureError",
    "InternalError",
    "JudgeReportError",
    "KeyFileError",
    "NodeLostError",
    "TaskEnvironmentError",
    "TaskError",
    "UnsafeInputsError",
    "UsageError",
    "VerificationError",
]


class AssayError(Exception):
    """Root of every error assay raises on purpose."""

    exit_code = 3

    def diagnostics(self) -> str:
        """A plain explanation for a person, with the fix where there is one."""
        return str(self)


class UsageError(AssayError):
    """The user asked for something that cannot be done as asked (exit 2)."""

    exit_code = 2


class BackendUnavailableError(UsageError):
    """The runtime backend asked for (or the default) cannot run here with every limit
    enforced (exit 2): a missing binary, a cgroup layout it cannot enforce limits on, a
    rootless host. The message names what is missing; `fix` names a backend that works.
    assay never falls back to another backend on its own."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.fix = fix

    def diagnostics(self) -> str:
        return f"{self}\n  fix: {self.fix}" if self.fix else str(self)


class TaskError(UsageError):
    """A task directory or its task.toml is invalid (exit 2)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


class TaskEnvironmentError(TaskError):
    """A task's `[environment]` cannot be used (exit 2): its image is not on the engine, its
    Dockerfile names a base image that is not, or the image lacks what assay runs in it."""

    def __init__(self, path: str, message: str, fix: str | None = None) -> None:
        super().__init__(path, message)
        self.fix = fix

    def diagnostics(self) -> str:
        return f"{self}\n  fix: {self.fix}" if self.fix else str(self)


class EnvironmentBuildError(TaskEnvironmentError):
    """A task's Dockerfile failed to build (exit 2); `log_tail` is the end of the build log."""

    def __init__(self, path: str, message: str, log_tail: str) -> None:
        super().__init__(path, message, fix="fix the Dockerfile, then `assay build TASK`")
        self.log_tail = log_tail

    def diagnostics(self) -> str:
        tail = "\n".join("  | " + line for line in self.log_tail.splitlines())
        return f"{self}\n  build log (last lines):\n{tail}\n  fix: {self.fix}"


class UnsafeInputsError(TaskError):
    """The task's inputs would hand the agent something it must not see (exit 2).

    Raised by the hardened tiers only: the baselines model harnesses that never check."""


class KeyFileError(UsageError):
    """A key file is missing, unreadable, too open, of the wrong kind, or already exists."""


class ClusterError(UsageError):
    """A Ray cluster cannot be used as asked (exit 2): nothing answers at the address, no node
    advertises the resource assay's gradings need, token authentication is off or the token
    does not match, or the `ray` extra is not installed. Raised before any grading starts."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.fix = fix

    def diagnostics(self) -> str:
        return f"{self}\n  fix: {self.fix}" if self.fix else str(self)


class InfrastructureError(AssayError):
    """Grading could not run to a verdict (exit 3): Docker missing, image missing, engine error."""

    exit_code = 3

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.fix = fix

    def diagnostics(self) -> str:
        return f"{self}\n  fix: {self.fix}" if self.fix else str(self)


class InternalError(InfrastructureError):
    """An exception nobody raised on purpose ended a grading (exit 3): no verdict, and never a
    failed one, since nothing was judged. The message names the reason and the exception."""

    reason = "infra:internal-error"

    def __init__(self, grading_id: str, exc: Exception) -> None:
        detail = f"{type(exc).__name__}: {exc}"
        super().__init__(
            f"{self.reason} in grading {grading_id}: {detail[:300]}",
            fix="a bug in assay or a fault on this host; its containers and temp files were "
            "removed, and grading it again is safe",
        )
        self.grading_id = grading_id
        self.exception_type = type(exc).__name__


class EngineUnavailableError(InfrastructureError):
    """No Docker engine answers."""


class NodeLostError(InfrastructureError):
    """A cluster node (or its worker) died under a grading, so no result came back. The batch
    grades the submission again from scratch under a new grading id; the lost one is swept."""


class AnswerError(InfrastructureError):
    """An answer of `assay serve`'s native routes that is not what its wire format
    (`assay.wire`) allows: not JSON, a field missing or extra, a reward that contradicts the
    score (exit 3). No verdict reached the client, so a reward client reports the item as an
    infrastructure error, never as a score."""


class ImageMissingError(InfrastructureError):
    """An image is not on this engine (exit 3); assay never pulls. A caller that can say how to
    make it (a task's environment) names that fix instead."""

    def __init__(self, name: str, fix: str) -> None:
        super().__init__(f"image {name!r} is not on this Docker engine", fix=fix)
        self.name = name


class EngineError(InfrastructureError):
    """A container backend (`assay.runtime.Runtime`) failed in a way that leaves no
    trustworthy result (exit 3): a container vanished or stopped at no limit, the engine
    refused a call. The grading it hit has no verdict."""


class ContainerStuckError(EngineError):
    """The engine answers, but not about one container: a call on it ran past the client's
    timeout (a runtime shim that stopped answering; seen with Debian's gVisor). Only that
    grading fails, also when the container could be removed after all (`removed`): what the
    engine reported about it while it was stuck is not trusted."""

    def __init__(self, message: str, fix: str | None = None, removed: bool = False) -> None:
        super().__init__(message, fix)
        self.removed = removed


class CensusUnavailableError(EngineError):
    """The backend cannot list a container's processes from outside (runsc here): whatever
    relies on the list (reusing a judge) must not happen."""


class GradingCancelledError(EngineError):
    """The controller cancelled a running grading (a batch aborted by a second Ctrl-C or a
    lost engine); it has no verdict (exit 3)."""


class ArchiveTooLargeError(AssayError):
    """An archive read out of a container exceeded its byte cap (exit 3 when it ends a
    command: no verdict). A grading turns it into a failed verdict with a `limit:` reason
    itself; it escapes only where nothing was being judged."""

    def __init__(self, cap: int) -> None:
        super().__init__(f"archive larger than its cap of {cap} bytes")
        self.cap = cap


class JudgeReportError(AssayError):
    """The judge's output was not a valid report (exit 3 if it ever escaped: the tiers turn it
    into an error verdict whose reasons are `reason_codes`)."""

    def __init__(self, detail: str, message: str) -> None:
        super().__init__(f"judge output rejected: {message}")
        self.detail = detail

    @property
    def reason_codes(self) -> tuple[str, str]:
        return "judge:invalid-output", f"judge:{self.detail}"


class FirewallError(AssayError):
    """An archive could not be materialised safely, or a firewall invariant broke.

    An archive the firewall refuses is not an error: `assay.firewall.check` returns a
    `Rejected`, and a grading fails with the rule as its reason."""


class VerificationError(AssayError):
    """An envelope did not verify. `reason` is a stable code such as `signature:invalid`."""

    exit_code = 1

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason

    def diagnostics(self) -> str:
        return f"verification failed [{self.reason}]: {self}"

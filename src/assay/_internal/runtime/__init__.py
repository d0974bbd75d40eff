"""Container runtimes: one protocol, several backends, one conformance suite."""

from .base import (
    LABEL,
    ArchiveTooLarge,
    Bind,
    CensusUnavailable,
    ContainerSpec,
    ContainerStuckError,
    ExecResult,
    Limits,
    Runtime,
    RuntimeError_,
    Scratch,
    Spawned,
)
from .runspawned import run_spawned
from .scope import GradingScope

__all__ = [
    "LABEL",
    "ArchiveTooLarge",
    "Bind",
    "CensusUnavailable",
    "ContainerSpec",
    "ContainerStuckError",
    "ExecResult",
    "GradingScope",
    "Limits",
    "Runtime",
    "RuntimeError_",
    "Scratch",
    "Spawned",
    "run_spawned",
]

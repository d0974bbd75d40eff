"""A task's own environment image: read the Dockerfile's bases, build, cache, check."""

from .build import EnvImage, ensure_environment

__all__ = ["EnvImage", "ensure_environment"]

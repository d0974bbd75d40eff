"""Small string helpers."""

from strkit import config
from strkit.slug import slugify
from strkit.wrap import shorten

__all__ = ["config", "shorten", "slugify"]
__version__ = "0.3.0"

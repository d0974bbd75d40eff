"""assay: grade AI coding agents so that the graded code cannot touch what grades it."""

__version__ = "0.1.0"

"""The implementation of the public API that `assay/__init__.py` re-exports."""

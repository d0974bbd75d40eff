"""Adapters that let outside harnesses drive assay, built on the public API only."""

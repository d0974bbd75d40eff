"""Trusted programs that run inside containers (stdlib only; Python 3.11 of the base image).

They are bind-mounted read-only at /assay. The runner runs in the candidate container,
the judge in the judge container; neither is ever imported by the host controller's
trust decisions, which re-check everything they print.
"""

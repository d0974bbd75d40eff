"""Importers: turn an outside benchmark (HumanEval) into assay tasks. The probe runs the
benchmark's own test code in a separate interpreter and uses the judge's value encoding."""

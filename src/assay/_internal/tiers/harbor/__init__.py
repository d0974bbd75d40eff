"""The Harbor tier: Harbor's separate-verifier mode as assay runs it (`grade`), compat-class,
and its strict reward parser (`reward`). Imports the core only."""

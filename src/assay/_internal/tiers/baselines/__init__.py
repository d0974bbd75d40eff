"""The unsafe baselines T0 (naive) and T1 (fresh) that prove each attack live (`grade`), and
SWE-bench's harness for repository tasks (`repo`). Never a mode to score with. Imports the
core, the compat tier and the repository tier."""

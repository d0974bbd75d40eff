"""Repository tasks on the compat tier (SWE-bench style): the pristine tree and the composed one
(`tree`), the path policy (`policy`), the test-patch applier (`patch`), FAIL_TO_PASS and
PASS_TO_PASS (`results`), the grading (`grade`). Imports the core and the compat tier."""

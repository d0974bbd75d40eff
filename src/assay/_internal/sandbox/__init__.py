"""Run untrusted code once and return its bytes, with no judge (`execute`): the core behind the
SandboxFusion- and Piston-compatible routes of `assay serve`."""

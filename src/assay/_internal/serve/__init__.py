"""`assay serve`: the HTTP service RL trainers and eval harnesses call (docs/integrations.md).

One shared `Grader` with warm judges behind a bounded queue; native routes that grade, and
the SandboxFusion and Piston routes that only run code in a fresh offline container."""

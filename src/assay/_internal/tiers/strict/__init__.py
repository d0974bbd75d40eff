"""The strict tier, T3 (ADR 0001): the candidate runs in a fresh container under the trusted
runner, the judge compares its bytes as data (`grade`); the candidate's run (`candidate`) and the
runner's report (`runner_report`), which the sandbox uses too; the judge's container
(`judgespec`), its report read strictly (`judge_report`), a fixed cases file's inputs made by the
controller (`fixedcases`), and warm judges shared across tasks (`judgepool`). Imports the core
only."""

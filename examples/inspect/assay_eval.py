"""An Inspect AI eval graded by assay, runnable offline:

    cd examples/inspect && inspect eval assay_eval.py --model mockllm/model

The model is Inspect's `mockllm/model`, scripted (see `scripted_model`) to answer each sample's
prompt with one `bash` tool call that writes a correct or a wrong solution, then to stop. The
tool calls run in the `assay` sandbox (the agent container: no network, task inputs read-only
at /task, a capped /workspace); `assay_scorer` grades each sample's workspace on the task's tier
(strict T3 for `add`, compat T2 for the pytest task `add-pytest`) and puts the signed verdict
in the score's metadata (`assay_dsse`), which `assay verify` checks.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageTool,
    GenerateConfig,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import ToolChoice, ToolInfo, bash

from assay.integrations.inspect_ai import assay_scorer

EXAMPLES = Path(__file__).resolve().parent.parent
SOLUTIONS = {
    "correct": "def add(a, b):\n    return a + b\n",
    "wrong": "def add(a, b):\n    return a - b\n",
}
# Set explicitly: otherwise mockllm counts tokens with a tokenizer it downloads.
USAGE = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)


def _sample(task_dir: str, variant: str) -> Sample:
    return Sample(
        id=f"{task_dir}-{variant}",
        input=f"Write solution.py with add(a, b) returning a + b. [script: {variant}]",
        target="1.0" if variant == "correct" else "0.0",
        metadata={"assay_task": str(EXAMPLES / task_dir)},
    )


def scripted_model(
    messages: list[ChatMessage], tools: list[ToolInfo], choice: ToolChoice, config: GenerateConfig
) -> ModelOutput:
    """One bash call writing the solution the prompt's [script: ...] names, then "done"."""
    if any(isinstance(m, ChatMessageTool) for m in messages):
        output = ModelOutput.from_content("mockllm/model", "done")
    else:
        variant = "correct" if "[script: correct]" in messages[-1].text else "wrong"
        cmd = f"printf %s {shlex.quote(SOLUTIONS[variant])} > solution.py"
        output = ModelOutput.for_tool_call("mockllm/model", "bash", {"command": cmd})
    output.usage = USAGE
    return output


@task
def assay_add() -> Task:
    return Task(
        dataset=[_sample(t, v) for t in ("add", "add-pytest") for v in ("correct", "wrong")],
        solver=[use_tools(bash(timeout=60)), generate()],
        scorer=assay_scorer(),
        sandbox="assay",
        model=get_model("mockllm/model", custom_outputs=scripted_model),
    )

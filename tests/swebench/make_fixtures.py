"""Writes the SWE-bench 5 fixtures beside this file from the hand-written repositories in
taskrepo/tasks/<id>/repo/ and the edits below. Run it again after editing either:

    .venv/bin/python tests/swebench/make_fixtures.py

Every patch is made by git (`git diff --cached` of an edited copy of the base tree). The
commits are made by each task's own setup_repo.sh, run here with the host's git exactly as the
task's Dockerfile runs it in the image (fixed names, emails and dates, so the SHAs are the
same): base_commit in task.yaml, rows.jsonl and eval.sh is that commit, and the Dockerfile
passes it to setup_repo.sh, whose `git reset --hard` fails the build if the image's git made a
different one. Before writing anything, every claim the fixtures make is checked on the host:
FAIL_TO_PASS fails at base and passes with the gold patch, PASS_TO_PASS passes both, and each
prediction file does what its name says (README.md).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from helpers.swebench import failed, marked_output, parse_log_pytest, passed  # noqa: E402

TASKREPO = HERE / "taskrepo"
DATASET = "SWE-bench/Acme"
HEREDOC = "EOF_114329324912"
START, END = ">>>>> Start Test Output", ">>>>> End Test Output"
# swebench.harness.run_evaluation.GIT_APPLY_CMDS: how the harness applies a model patch
GIT_APPLY_CMDS = [
    ["git", "apply", "--verbose"],
    ["git", "apply", "--verbose", "--3way"],
    ["git", "apply", "--verbose", "--reject"],
    ["patch", "--batch", "--forward", "--fuzz=5", "-p1", "-i"],
]
NON_TEST_EXTS = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml")
NON_TEST_EXTS += (".yaml", ".toml")
# The host's own git configuration must not reach the commits or the patches.
GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
GIT_ENV |= {"LC_ALL": "C", "TZ": "UTC"}


@dataclass
class Spec:
    instance_id: str
    repo: str
    version: str
    created_at: str
    author: tuple[str, str]
    # (date, message) of the initial, base and fix commits
    commits: tuple[tuple[str, str], tuple[str, str], tuple[str, str]]
    initial_excludes: str  # left out of the initial commit, added by the base commit
    branch: str
    tag: str
    install: str  # the lines of setup_repo.sh that stand in for `pip install -e .`
    gold: dict[str, str]  # path -> content after the fix
    tests: dict[str, str]  # path -> content after the test patch
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    problem_statement: str
    hints: str = ""
    exports: list[str] = field(default_factory=list)
    src_root: str = ""  # what the editable install puts on sys.path, relative to the repo
    wrong: dict[str, str] = field(default_factory=dict)
    edits_tests: dict[str, str] = field(default_factory=dict)
    # a fake version of the base tree the "unappliable" prediction was made against
    unappliable_base: dict[str, str] = field(default_factory=dict)
    unappliable_fix: dict[str, str] = field(default_factory=dict)
    dataset_v5_columns: bool = False

    @property
    def dir(self) -> Path:
        return TASKREPO / "tasks" / self.instance_id

    def base_file(self, path: str) -> str:
        return (self.dir / "repo" / path).read_text()

    def edit(self, path: str, *pairs: tuple[str, str]) -> str:
        text = self.base_file(path)
        for old, new in pairs:
            assert text.count(old) == 1, (path, old)
            text = text.replace(old, new)
        return text


def image_name(instance_id: str) -> str:
    return f"sweb.eval.x86_64.{instance_id}:latest"


# --- acme__calc-101 -------------------------------------------------------------------------

CALC_EXPR_OLD = """    def expression(self) -> float:
        left = self.term()
        if self.peek() in ("+", "-"):
            op = self.take()
            right = self.expression()
            return left + right if op == "+" else left - right
        return left
"""
CALC_EXPR_NEW = """    def expression(self) -> float:
        value = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()
            right = self.term()
            value = value + right if op == "+" else value - right
        return value
"""
CALC_TERM_OLD = """    def term(self) -> float:
        left = self.factor()
        if self.peek() in ("*", "/"):
            op = self.take()
            right = self.term()
            return left * right if op == "*" else left / right
        return left
"""
CALC_TERM_NEW = """    def term(self) -> float:
        value = self.factor()
        while self.peek() in ("*", "/"):
            op = self.take()
            right = self.factor()
            value = value * right if op == "*" else value / right
        return value
"""
CALC_CHANGELOG = (
    "# Changelog\n",
    "# Changelog\n\n## 1.0.1\n\n- `-` and `/` chains are evaluated from the left (#101).\n",
)
CALC_ADD_OLD = '    assert evaluate("1 + 2") == 3\n'
CALC_ADD_NEW = '    assert evaluate("1 + 2") == 3\n    assert evaluate("1 + 2 + 3") == 6\n'
CALC_NEW_TESTS = """

def test_subtraction_is_left_associative():
    assert evaluate("10 - 4 - 3") == 3
    assert evaluate("20 - 5 - 5 - 5") == 5


def test_division_is_left_associative():
    assert evaluate("16 / 4 / 2") == 2


def test_mixed_chain():
    assert evaluate("2 * 6 / 3 - 1 - 1") == 2
"""
# the same three tests, asserting what the unfixed parser returns
CALC_FORGED_TESTS = """

def test_subtraction_is_left_associative():
    assert evaluate("10 - 4 - 3") == 9
    assert evaluate("20 - 5 - 5 - 5") == 15


def test_division_is_left_associative():
    assert evaluate("16 / 4 / 2") == 8


def test_mixed_chain():
    assert evaluate("2 * 6 / 3 - 1 - 1") == 4
"""

CALC_PROBLEM = """\
Chained subtraction evaluates to the wrong value

`evaluate` seems to group a chain of subtractions from the right:

```python
>>> from calc import evaluate
>>> evaluate("8 - 2 - 1")
7.0
```

I'd expect `8 - 2 - 1` to mean `(8 - 2) - 1`, the way Python and every calculator I know read
it. Division chains look wrong in the same way. Addition and multiplication are fine, since
the grouping doesn't change their result.

calc 1.0, Python 3.11.
"""

# --- acme__strkit-7 -------------------------------------------------------------------------

SLUG_RE_OLD = '_UNSAFE = re.compile(r"[^a-z0-9]")\n'
SLUG_RE_NEW = '_UNSAFE = re.compile(r"[^a-z0-9]+")\n'
SLUG_RET_OLD = "    return _UNSAFE.sub(sep, ascii_text.lower())\n"
SLUG_RET_NEW = "    return _UNSAFE.sub(sep, ascii_text.lower()).strip(sep)\n"
SLUG_DOC_OLD = '    """A lowercase ASCII slug of `text`, words joined by `sep`.\n'
SLUG_DOC_NEW = (
    '    """A lowercase ASCII slug of `text`, words joined by `sep`.\n\n'
    "    Runs of anything else become one `sep`, and none is left at either end.\n"
)
SLUG_CASES_OLD = '        ("CamelCase", "camelcase"),\n'
SLUG_CASES_NEW = (
    '        ("CamelCase", "camelcase"),\n'
    '        ("Hello,World!", "hello-world"),\n'
    '        ("--leading", "leading"),\n'
    '        ("a...b", "a-b"),\n'
)
SLUG_NEW_TEST = """

def test_separator_runs_collapse():
    assert slugify("one -- two", sep="_") == "one_two"
"""
CONFIG_NEW_TEST = """

def test_empty_locale_falls_back_to_default(monkeypatch):
    monkeypatch.setenv("STRKIT_LOCALE", "")
    assert config.locale() == config.DEFAULT_LOCALE
"""
# the slug tests loosened until the unfixed slugify passes them
STRKIT_FORGED_SLUG_TESTS = """import re

import pytest
from strkit import slugify


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("python", "python"),
        ("snake_case", "snake-case"),
        ("CamelCase", "camelcase"),
        ("Hello,World!", "hello-world"),
        ("--leading", "leading"),
        ("a...b", "a-b"),
    ],
)
def test_slug(text, expected):
    assert re.sub("-+", "-", slugify(text)).strip("-") == expected


def test_custom_separator():
    assert slugify("snake_case", sep="_") == "snake_case"


def test_non_ascii_is_transliterated():
    assert slugify("Caf\\u00e9") == "cafe"


def test_separator_runs_collapse():
    assert re.sub("_+", "_", slugify("one -- two", sep="_")) == "one_two"
"""

STRKIT_PROBLEM = """\
slugify leaves stray separators in the slug

When a title has punctuation next to a space, or starts or ends with punctuation, the slug
comes out full of dashes:

```python
>>> from strkit import slugify
>>> slugify("Release notes: v2 (draft)")
'release-notes--v2--draft-'
```

A slug should never start or end with the separator, and never have two in a row. It happens
with a custom `sep` too.
"""
STRKIT_HINTS = """\
Looks like every character that isn't a letter or a digit is replaced on its own, so a
run of them turns into a run of separators. Trailing punctuation (very common in titles)
gives the trailing dash.
"""

CONFTEST_FORGERY = """import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
"""

CALC_INSTALL = """\
# what `python -m pip install -e .` did with the setuptools of the time (`setup.py develop`):
# the repository on sys.path through easy-install.pth, and an egg-link
printf '%s\\n' /testbed > "$SITE/easy-install.pth"
printf '%s\\n%s' /testbed . > "$SITE/calc.egg-link"
"""
STRKIT_INSTALL = """\
# what `python -m pip install -e .` does (PEP 660, src layout): a static .pth naming src/, and
# a dist-info whose direct_url.json says editable
printf '%s\\n' /testbed/src > "$SITE/__editable__.strkit-0.3.0.pth"
DIST="$SITE/strkit-0.3.0.dist-info"
mkdir -p "$DIST"
printf 'Metadata-Version: 2.1\\nName: strkit\\nVersion: 0.3.0\\nSummary: Small string helpers\\n' > "$DIST/METADATA"
printf 'pip\\n' > "$DIST/INSTALLER"
printf '{"dir_info": {"editable": true}, "url": "file:///testbed"}' > "$DIST/direct_url.json"
printf '%s\\n' __editable__.strkit-0.3.0.pth,, strkit-0.3.0.dist-info/METADATA,, \\
    strkit-0.3.0.dist-info/INSTALLER,, strkit-0.3.0.dist-info/direct_url.json,, \\
    strkit-0.3.0.dist-info/RECORD,, > "$DIST/RECORD"
"""


def specs() -> list[Spec]:
    calc = Spec(
        instance_id="acme__calc-101",
        repo="acme/calc",
        version="1.0",
        created_at="2023-03-05T09:12:44Z",
        author=("Ada Acme", "ada@acme.invalid"),
        commits=(
            ("2023-01-10T09:00:00+00:00", "Initial commit"),
            ("2023-02-14T16:30:00+00:00", "Add a changelog"),
            ("2023-03-06T11:05:00+00:00", "Evaluate - and / chains from the left (#101)"),
        ),
        initial_excludes="CHANGELOG.md",
        branch="upstream-fix",
        tag="v1.1",
        install=CALC_INSTALL,
        gold={},
        tests={},
        fail_to_pass=[
            "tests/test_parser.py::test_subtraction_is_left_associative",
            "tests/test_parser.py::test_division_is_left_associative",
            "tests/test_parser.py::test_mixed_chain",
        ],
        pass_to_pass=[
            "tests/test_parser.py::test_tokenize",
            "tests/test_parser.py::test_addition",
            "tests/test_parser.py::test_precedence",
            "tests/test_parser.py::test_parentheses",
            "tests/test_parser.py::test_unary_minus",
            "tests/test_parser.py::test_rejects_garbage",
        ],
        problem_statement=CALC_PROBLEM,
        src_root=".",
    )
    parser = "calc/parser.py"
    calc.gold = {
        parser: calc.edit(parser, (CALC_EXPR_OLD, CALC_EXPR_NEW), (CALC_TERM_OLD, CALC_TERM_NEW)),
        "CHANGELOG.md": calc.edit("CHANGELOG.md", CALC_CHANGELOG),
    }
    calc.tests = {
        "tests/test_parser.py": calc.edit("tests/test_parser.py", (CALC_ADD_OLD, CALC_ADD_NEW))
        + CALC_NEW_TESTS
    }
    calc.wrong = {parser: calc.edit(parser, (CALC_EXPR_OLD, CALC_EXPR_NEW))}
    calc.edits_tests = {
        "tests/test_parser.py": calc.base_file("tests/test_parser.py") + CALC_FORGED_TESTS
    }
    # made against a parser whose methods were written differently: its removed lines and its
    # preimage blob are nowhere in the repository
    fake = calc.edit(parser, (CALC_EXPR_OLD, CALC_EXPR_OLD.replace("left", "lhs")))
    calc.unappliable_base = {parser: fake}
    calc.unappliable_fix = {
        parser: fake.replace(CALC_EXPR_OLD.replace("left", "lhs"), CALC_EXPR_NEW)
    }

    strkit = Spec(
        instance_id="acme__strkit-7",
        repo="acme/strkit",
        version="0.3",
        created_at="2022-10-01T07:30:00Z",
        author=("Bo Strand", "bo@strkit.invalid"),
        commits=(
            ("2022-08-01T12:00:00+02:00", "strkit: slugify and shorten"),
            ("2022-09-20T18:45:00+02:00", "Document the 0.3.0 changes"),
            ("2022-10-03T10:00:00+02:00", "slugify: collapse separator runs, trim the ends (#7)"),
        ),
        initial_excludes="CHANGES.md",
        branch="fix-slug-separators",
        tag="v0.3.1",
        install=STRKIT_INSTALL,
        gold={},
        tests={},
        fail_to_pass=[
            # No whitespace in a parametrized id: SWE-bench's data holds such ids cut at the
            # first space (#290), which no exact id matches; tests/docker/test_swebench_docker.py
            # makes that variant and `assay validate` names it.
            "tests/unit/test_slug.py::test_slug[Hello,World!-hello-world]",
            "tests/unit/test_slug.py::test_slug[--leading-leading]",
            "tests/unit/test_slug.py::test_slug[a...b-a-b]",
            "tests/unit/test_slug.py::test_separator_runs_collapse",
        ],
        pass_to_pass=[
            "tests/unit/test_config.py::test_locale_comes_from_the_environment",
            "tests/unit/test_config.py::test_empty_locale_falls_back_to_default",
            "tests/unit/test_slug.py::test_slug[python-python]",
            "tests/unit/test_slug.py::test_slug[snake_case-snake-case]",
            "tests/unit/test_slug.py::test_slug[CamelCase-camelcase]",
            "tests/unit/test_slug.py::test_custom_separator",
            "tests/unit/test_slug.py::test_non_ascii_is_transliterated",
        ],
        problem_statement=STRKIT_PROBLEM,
        hints=STRKIT_HINTS,
        exports=["export STRKIT_LOCALE=C"],
        src_root="src",
        dataset_v5_columns=True,
    )
    slug = "src/strkit/slug.py"
    strkit.gold = {
        slug: strkit.edit(
            slug,
            (SLUG_RE_OLD, SLUG_RE_NEW),
            (SLUG_RET_OLD, SLUG_RET_NEW),
            (SLUG_DOC_OLD, SLUG_DOC_NEW),
        )
    }
    strkit.tests = {
        "tests/unit/test_config.py": strkit.base_file("tests/unit/test_config.py")
        + CONFIG_NEW_TEST,
        "tests/unit/test_slug.py": strkit.edit(
            "tests/unit/test_slug.py", (SLUG_CASES_OLD, SLUG_CASES_NEW)
        )
        + SLUG_NEW_TEST,
    }
    strkit.wrong = {slug: strkit.edit(slug, (SLUG_RE_OLD, SLUG_RE_NEW))}
    strkit.edits_tests = {"tests/unit/test_slug.py": STRKIT_FORGED_SLUG_TESTS}
    fake = strkit.edit(
        slug, (SLUG_RET_OLD, "    text = ascii_text.lower()\n    return _UNSAFE.sub(sep, text)\n")
    )
    strkit.unappliable_base = {slug: fake}
    strkit.unappliable_fix = {
        slug: fake.replace(
            "_UNSAFE.sub(sep, text)\n", "_UNSAFE.sub(sep, text).strip(sep)\n"
        ).replace(SLUG_RE_OLD, SLUG_RE_NEW)
    }
    return [calc, strkit]


# --- git and patches ------------------------------------------------------------------------


def git(cwd: Path, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(
        ["git", *args], cwd=cwd, env=env or GIT_ENV, capture_output=True, text=True
    )
    if check and out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {cwd}: {out.stderr}")
    return out.stdout


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", message)


def scratch_repo(tree: Path, where: Path, files: dict[str, str] | None = None) -> Path:
    """A repository holding `tree` (then `files` written over it) in one commit."""
    shutil.copytree(tree, where)
    for path, content in (files or {}).items():
        (where / path).write_text(content)
    git(where, "init", "-q", "-b", "main")
    commit_all(where, "base")
    return where


def diff_of(repo: Path, files: dict[str, str]) -> str:
    """The `git diff` that takes repo's HEAD to HEAD with `files` written; the tree is reset."""
    for path, content in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(content)
    git(repo, "add", "-A")
    patch = git(repo, "diff", "--cached", "--no-color", "--no-ext-diff", "--no-renames")
    git(repo, "reset", "-q", "--hard")
    git(repo, "clean", "-qfdx")
    assert patch.startswith("diff --git "), files.keys()
    return patch


def patched_files(patch: str) -> tuple[list[str], list[str]]:
    """(files the patch modifies, files it creates), as swebench's get_modified_files and
    get_new_files read them."""
    modified, new = [], []
    for block in re.split(r"^(?=diff --git )", patch, flags=re.M):
        m = re.match(r"diff --git a/(\S+) b/(\S+)", block)
        if not m:
            continue
        (new if re.search(r"^--- /dev/null$", block, re.M) else modified).append(m.group(2))
    return modified, new


# --- the task directory ---------------------------------------------------------------------

ACTIVATE = """\
# /opt/miniconda3/bin/activate: a stand-in for conda's, in images that mirror SWE-bench's.
# Sourcing it defines `conda` and activates the base environment, as conda's does; then
# `conda activate <env>` puts /opt/miniconda3/envs/<env>/bin first on PATH, replacing the
# environment active before, and sets CONDA_PREFIX and CONDA_DEFAULT_ENV. Safe under set -u.
_conda_drop_active() {
    if [ -n "${CONDA_PREFIX:-}" ]; then
        local path=":${PATH}:"
        path="${path//:${CONDA_PREFIX}\\/bin:/:}"
        path="${path#:}"
        PATH="${path%:}"
    fi
}
conda() {
    local prefix
    case "${1:-}" in
        activate)
            if [ "${2:-base}" = base ]; then
                prefix=/opt/miniconda3
            else
                prefix="/opt/miniconda3/envs/$2"
            fi
            if [ ! -d "$prefix" ]; then
                echo "EnvironmentNameNotFound: Could not find conda environment: ${2:-base}" >&2
                return 1
            fi
            _conda_drop_active
            export PATH="${prefix}/bin:${PATH}"
            export CONDA_PREFIX="$prefix" CONDA_DEFAULT_ENV="${2:-base}" CONDA_SHLVL=1
            hash -r
            ;;
        deactivate)
            _conda_drop_active
            export PATH
            unset CONDA_PREFIX CONDA_DEFAULT_ENV
            export CONDA_SHLVL=0
            hash -r
            ;;
        *)
            echo "conda: only \\`conda activate\\` and \\`conda deactivate\\` are available here" >&2
            return 1
            ;;
    esac
}
conda activate base
"""

DOCKERIGNORE = "**/__pycache__\n**/*.pyc\n**/.pytest_cache\n"

SETUP_REPO = """\
#!/bin/bash
# The setup script of this instance image ({iid}), run by its Dockerfile the way
# SWE-bench's instance images run setup_repo.sh. SWE-bench's clones the GitHub repository;
# this makes the same clone ({repo}) from the build context: the history up to the base
# commit, then the commit that merged the fix (gold.patch + test.patch), still reachable from
# a branch and a tag:
#     {branch}
#     {tag}
# and named by main's reflog after main is reset to the base commit: the leak of SWE-bench
# issues #465/#581/#590, kept here on purpose.
# tests/swebench/make_fixtures.py runs the history part on the host (HISTORY_ONLY=1,
# TESTBED=<dir>) to learn the SHAs; $1 is the base commit it found.
set -euxo pipefail
# nobody's git configuration reaches the commits: the host's when make_fixtures.py runs this
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
TESTBED="${{TESTBED:-/testbed}}"
FIX="${{FIX:-/tmp/fix}}"
cd "$TESTBED"

commit() {{
    GIT_AUTHOR_NAME="{name}" GIT_AUTHOR_EMAIL="{email}" GIT_AUTHOR_DATE="$1" \\
        GIT_COMMITTER_NAME="{name}" GIT_COMMITTER_EMAIL="{email}" GIT_COMMITTER_DATE="$1" \\
        git commit -q --no-verify --no-gpg-sign -m "$2"
}}
git init -q -b main
git add -A -- . ':(exclude){excludes}'
commit "{d0}" "{m0}"
git add -A
commit "{d1}" "{m1}"
BASE="$(git rev-parse HEAD)"
git apply "$FIX/gold.patch" "$FIX/test.patch"
git add -A
commit "{d2}" "{m2}"
git branch {branch}
git tag {tag}
git reset -q --hard "${{1:-$BASE}}"
test "$(git rev-parse HEAD)" = "${{1:-$BASE}}"
test -z "$(git status --porcelain)"
if [ "${{HISTORY_ONLY:-0}}" = 1 ]; then exit 0; fi
unset GIT_CONFIG_GLOBAL GIT_CONFIG_NOSYSTEM

source /opt/miniconda3/bin/activate
conda activate testbed
echo "Current environment: $CONDA_DEFAULT_ENV"
SITE="$(python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
{install}
git config --global user.email setup@swebench.config
git config --global user.name SWE-bench
"""

DOCKERFILE = """\
# The instance image of {iid}, mirroring the layout of SWE-bench's
# sweb.eval.x86_64.* images on assay's local base image (never pulled): a conda-style environment at
# /opt/miniconda3/envs/testbed (a venv over the system's python3 and pytest), the repository at
# /testbed on its base commit, installed in development mode. Written by
# tests/swebench/make_fixtures.py; the build context is this directory.
FROM assay-base:latest
RUN apt-get update && apt-get install -y --no-install-recommends git patch && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv --without-pip --system-site-packages /opt/miniconda3/envs/testbed \\
 && printf '%s\\n' '#!/opt/miniconda3/envs/testbed/bin/python' 'import sys' 'from pytest import console_main' 'sys.exit(console_main())' > /opt/miniconda3/envs/testbed/bin/pytest \\
 && chmod 755 /opt/miniconda3/envs/testbed/bin/pytest
COPY activate /opt/miniconda3/bin/activate
COPY repo/ /testbed/
COPY setup_repo.sh /root/
COPY gold.patch test.patch /tmp/fix/
RUN /bin/bash /root/setup_repo.sh {base} && rm -rf /tmp/fix
WORKDIR /testbed/
"""


class _Dumper(yaml.SafeDumper):
    """swebench.task.repo's: multi-line strings as literal blocks."""


_Dumper.add_representer(
    str,
    lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None),
)


def dump_yaml(data: dict) -> str:
    return yaml.dump(
        data, Dumper=_Dumper, sort_keys=True, allow_unicode=True, default_flow_style=False
    )


def eval_script(spec: Spec, base: str, test_patch: str) -> str:
    """What swebench's make_eval_script_list_py made, with the test command SWE-bench's specs
    give pytest repositories (`pytest -rA`) and the spec's `eval_commands` (the exports)."""
    modified, new = patched_files(test_patch)
    resets = []
    if modified:
        resets.append(f"git checkout {base} {' '.join(modified)}")
    if new:
        resets.append(f"rm -f {' '.join(new)}")
    directives = re.findall(r"diff --git a/.* b/(.*)", test_patch)
    directives = [d for d in directives if not d.endswith(NON_TEST_EXTS)]
    lines = [
        "#!/bin/bash",
        "set -uxo pipefail",
        "source /opt/miniconda3/bin/activate",
        "conda activate testbed",
        "cd /testbed",
        *spec.exports,
        "git config --global --add safe.directory /testbed",
        "cd /testbed",
        "git status",
        "git show",
        f"git -c core.fileMode=false diff {base}",
        "source /opt/miniconda3/bin/activate",
        "conda activate testbed",
        *resets,
        f"git apply -v - <<'{HEREDOC}'\n{test_patch}\n{HEREDOC}",
        f": '{START}'",
        " ".join(["pytest -rA", *directives]),
        f": '{END}'",
        *resets,
    ]
    return "\n".join(lines) + "\n"


# --- checking on the host -------------------------------------------------------------------


def history(spec: Spec, work: Path, gold: str, test: str) -> tuple[Path, dict[str, str]]:
    """Run the task's setup_repo.sh on a copy of repo/ (history only); the clone and its SHAs."""
    clone = work / "testbed"
    shutil.copytree(spec.dir / "repo", clone)
    fix = work / "fix"
    fix.mkdir()
    (fix / "gold.patch").write_text(gold)
    (fix / "test.patch").write_text(test)
    env = GIT_ENV | {"HISTORY_ONLY": "1", "TESTBED": str(clone), "FIX": str(fix)}
    run = subprocess.run(
        ["bash", str(spec.dir / "setup_repo.sh")], env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    shas = {
        "initial_commit": git(clone, "rev-list", "--max-parents=0", "HEAD").strip(),
        "base_commit": git(clone, "rev-parse", "HEAD").strip(),
        "fix_commit": git(clone, "rev-parse", spec.branch).strip(),
    }
    assert git(clone, "rev-parse", f"{spec.tag}^{{commit}}").strip() == shas["fix_commit"]
    return clone, shas


def run_like_eval(spec: Spec, clone: Path, base: str, model_patch: str, test_patch: str):
    """What eval.sh would report for `model_patch`, on the host: the patch applied as the
    harness applies it, then eval.sh's steps (reset the test files, apply the test patch, run
    pytest -rA). Returns (applied, status map)."""
    work = Path(tempfile.mkdtemp(prefix="swebench-eval-"))
    try:
        tree = work / "testbed"
        shutil.copytree(clone, tree, symlinks=True)
        applied = not model_patch
        if model_patch:
            (work / "patch.diff").write_text(model_patch)
            for cmd in GIT_APPLY_CMDS:
                git(tree, "checkout", "--", ".")
                git(tree, "clean", "-qfd")
                run = subprocess.run(
                    [*cmd, str(work / "patch.diff")], cwd=tree, env=GIT_ENV, capture_output=True
                )
                if run.returncode == 0:
                    applied = True
                    break
        if not applied:
            return False, {}
        modified, new = patched_files(test_patch)
        if modified:
            git(tree, "checkout", base, *modified)
        for path in new:
            (tree / path).unlink(missing_ok=True)
        subprocess.run(
            ["git", "apply", "-v", "-"],
            cwd=tree,
            input=test_patch,
            text=True,
            env=GIT_ENV,
            capture_output=True,
            check=True,
        )
        directives = re.findall(r"diff --git a/.* b/(.*)", test_patch)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHON"))}
        env |= {"PYTHONPATH": str(tree / spec.src_root), "PYTHONDONTWRITEBYTECODE": "1"}
        for line in spec.exports:
            name, _, value = line.removeprefix("export ").partition("=")
            env[name] = value
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", *directives],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        log = f": '{START}'\n{run.stdout}\n: '{END}'\n"
        return True, parse_log_pytest(marked_output(log))
    finally:
        shutil.rmtree(work)


def check(spec: Spec, clone: Path, base: str, patches: dict[str, str], test: str) -> None:
    f2p, p2p = spec.fail_to_pass, spec.pass_to_pass

    def outcome(name: str) -> tuple[bool, dict[str, str]]:
        return run_like_eval(spec, clone, base, patches[name], test)

    applied, sm = outcome("empty")
    assert applied and all(failed(t, sm) for t in f2p), (spec.instance_id, "base", sm)
    assert all(passed(t, sm) for t in p2p), (spec.instance_id, "base", sm)
    assert len(sm) == len(f2p) + len(p2p), (spec.instance_id, "unlisted tests", sm)
    applied, sm = outcome("gold")
    assert applied and all(passed(t, sm) for t in f2p + p2p), (spec.instance_id, sm)
    applied, sm = outcome("wrong")
    assert applied and any(failed(t, sm) for t in f2p), (spec.instance_id, "wrong", sm)
    assert all(passed(t, sm) for t in p2p), (spec.instance_id, "wrong", sm)
    applied, sm = outcome("unappliable")
    assert not applied, (spec.instance_id, "the unappliable patch applied")
    # SWE-bench #631: the forged reports pass every test under eval.sh
    applied, sm = outcome("conftest")
    assert applied and all(passed(t, sm) for t in f2p + p2p), (spec.instance_id, sm)
    # eval.sh resets the test files the test patch touches, so the rewrite is undone there;
    # applied alone (no reset, no test patch), the rewritten file passes at the base commit
    applied, sm = outcome("edits_tests")
    assert applied and all(failed(t, sm) for t in f2p), (spec.instance_id, "edits", sm)
    applied, sm = run_like_eval(spec, clone, base, "", patches["edits_tests"])
    forged = [t for t in f2p if t.startswith(tuple(spec.edits_tests))]
    assert forged and all(passed(t, sm) for t in forged), (spec.instance_id, sm)


# --- writing --------------------------------------------------------------------------------


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        fh.write(text)


def main() -> None:
    rows, predictions, shas_all = [], {}, {}
    write(TASKREPO / "sweb.yaml", dump_yaml({"datasets": [DATASET], "splits": ["test"]}))
    for spec in specs():
        d = spec.dir
        with tempfile.TemporaryDirectory(prefix="swebench-fixture-") as tmp:
            work = Path(tmp)
            scratch = scratch_repo(d / "repo", work / "scratch")
            gold = diff_of(scratch, spec.gold)
            test = diff_of(scratch, spec.tests)
            patches = {
                "gold": gold,
                "wrong": diff_of(scratch, spec.wrong),
                "empty": "",
                "conftest": diff_of(scratch, {"conftest.py": CONFTEST_FORGERY}),
                "edits_tests": diff_of(scratch, spec.edits_tests),
            }
            fake = scratch_repo(d / "repo", work / "fake", spec.unappliable_base)
            patches["unappliable"] = diff_of(fake, spec.unappliable_fix)
            modified, new = patched_files(test)
            assert all(p.startswith("tests/") for p in modified + new), (modified, new)

            install = spec.install.rstrip("\n")
            setup = SETUP_REPO.format(
                iid=spec.instance_id,
                repo=spec.repo,
                branch=spec.branch,
                tag=spec.tag,
                name=spec.author[0],
                email=spec.author[1],
                excludes=spec.initial_excludes,
                d0=spec.commits[0][0],
                m0=spec.commits[0][1],
                d1=spec.commits[1][0],
                m1=spec.commits[1][1],
                d2=spec.commits[2][0],
                m2=spec.commits[2][1],
                install=install,
            )
            write(d / "setup_repo.sh", setup)
            clone, shas = history(spec, work / "history", gold, test)
            base = shas["base_commit"]
            check(spec, clone, base, patches, test)

        script = eval_script(spec, base, test)
        meta = {
            "base_commit": base,
            "created_at": spec.created_at,
            "datasets": [DATASET],
            "environment_setup_commit": base,
            "eval_type": "pass_and_fail",
            "image": image_name(spec.instance_id),
            "instance_id": spec.instance_id,
            "log_parser": "parse_log_pytest",
            "repo": spec.repo,
            "split": "test",
            "version": spec.version,
        }
        write(d / "task.yaml", dump_yaml(meta))
        tests = {"FAIL_TO_PASS": spec.fail_to_pass, "PASS_TO_PASS": spec.pass_to_pass}
        write(d / "tests.json", json.dumps(tests, indent=2, ensure_ascii=False) + "\n")
        write(d / "problem_statement.md", spec.problem_statement)
        if spec.hints:
            write(d / "hints.md", spec.hints)
        write(d / "gold.patch", gold)
        write(d / "test.patch", test)
        write(d / "eval.sh", script)
        write(d / "Dockerfile", DOCKERFILE.format(iid=spec.instance_id, base=base))
        write(d / "activate", ACTIVATE)
        write(d / ".dockerignore", DOCKERIGNORE)
        shas_all[spec.instance_id] = {
            **shas,
            "branch": spec.branch,
            "tag": spec.tag,
            "image": image_name(spec.instance_id),
        }

        # The dataset row as HuggingFace serves it (column order of princeton-nlp/SWE-bench).
        row = {
            "repo": spec.repo,
            "instance_id": spec.instance_id,
            "base_commit": base,
            "patch": gold,
            "test_patch": test,
            "problem_statement": spec.problem_statement,
            "hints_text": spec.hints,
            "created_at": spec.created_at,
            "version": spec.version,
            "FAIL_TO_PASS": json.dumps(spec.fail_to_pass),
            "PASS_TO_PASS": json.dumps(spec.pass_to_pass),
            "environment_setup_commit": base,
        }
        if spec.dataset_v5_columns:
            row |= {
                "image": meta["image"],
                "log_parser": meta["log_parser"],
                "eval_type": meta["eval_type"],
                "eval_script": script,
            }
        rows.append(row)
        for name, patch in patches.items():
            predictions.setdefault(name, []).append((spec.instance_id, patch))

    write(HERE / "rows.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    models = {
        "gold": "gold",
        "wrong": "acme-wrong-fix",
        "empty": "acme-empty",
        "unappliable": "acme-stale-context",
        "conftest": "acme-conftest-forgery",
        "edits_tests": "acme-test-editor",
    }
    for name, entries in predictions.items():
        lines = [
            json.dumps({"instance_id": iid, "model_name_or_path": models[name], "model_patch": p})
            + "\n"
            for iid, p in entries
        ]
        write(HERE / "predictions" / f"{name}.jsonl", "".join(lines))
    write(HERE / "history.json", json.dumps(shas_all, indent=2) + "\n")
    for iid, shas in shas_all.items():
        print(iid, " ".join(f"{k}={v}" for k, v in shas.items()))


if __name__ == "__main__":
    main()

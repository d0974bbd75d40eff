#!/bin/bash
# The setup script of this instance image (acme__calc-101), run by its Dockerfile the way
# SWE-bench's instance images run setup_repo.sh. SWE-bench's clones the GitHub repository;
# this makes the same clone (acme/calc) from the build context: the history up to the base
# commit, then the commit that merged the fix (gold.patch + test.patch), still reachable from
# a branch and a tag:
#     upstream-fix
#     v1.1
# and named by main's reflog after main is reset to the base commit: the leak of SWE-bench
# issues #465/#581/#590, kept here on purpose.
# tests/swebench/make_fixtures.py runs the history part on the host (HISTORY_ONLY=1,
# TESTBED=<dir>) to learn the SHAs; $1 is the base commit it found.
set -euxo pipefail
# nobody's git configuration reaches the commits: the host's when make_fixtures.py runs this
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
TESTBED="${TESTBED:-/testbed}"
FIX="${FIX:-/tmp/fix}"
cd "$TESTBED"

commit() {
    GIT_AUTHOR_NAME="Ada Acme" GIT_AUTHOR_EMAIL="ada@acme.invalid" GIT_AUTHOR_DATE="$1" \
        GIT_COMMITTER_NAME="Ada Acme" GIT_COMMITTER_EMAIL="ada@acme.invalid" GIT_COMMITTER_DATE="$1" \
        git commit -q --no-verify --no-gpg-sign -m "$2"
}
git init -q -b main
git add -A -- . ':(exclude)CHANGELOG.md'
commit "2023-01-10T09:00:00+00:00" "Initial commit"
git add -A
commit "2023-02-14T16:30:00+00:00" "Add a changelog"
BASE="$(git rev-parse HEAD)"
git apply "$FIX/gold.patch" "$FIX/test.patch"
git add -A
commit "2023-03-06T11:05:00+00:00" "Evaluate - and / chains from the left (#101)"
git branch upstream-fix
git tag v1.1
git reset -q --hard "${1:-$BASE}"
test "$(git rev-parse HEAD)" = "${1:-$BASE}"
test -z "$(git status --porcelain)"
if [ "${HISTORY_ONLY:-0}" = 1 ]; then exit 0; fi
unset GIT_CONFIG_GLOBAL GIT_CONFIG_NOSYSTEM

source /opt/miniconda3/bin/activate
conda activate testbed
echo "Current environment: $CONDA_DEFAULT_ENV"
SITE="$(python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
# what `python -m pip install -e .` did with the setuptools of the time (`setup.py develop`):
# the repository on sys.path through easy-install.pth, and an egg-link
printf '%s\n' /testbed > "$SITE/easy-install.pth"
printf '%s\n%s' /testbed . > "$SITE/calc.egg-link"
git config --global user.email setup@swebench.config
git config --global user.name SWE-bench

#!/bin/bash
# The setup script of this instance image (acme__strkit-7), run by its Dockerfile the way
# SWE-bench's instance images run setup_repo.sh. SWE-bench's clones the GitHub repository;
# this makes the same clone (acme/strkit) from the build context: the history up to the base
# commit, then the commit that merged the fix (gold.patch + test.patch), still reachable from
# a branch and a tag:
#     fix-slug-separators
#     v0.3.1
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
    GIT_AUTHOR_NAME="Bo Strand" GIT_AUTHOR_EMAIL="bo@strkit.invalid" GIT_AUTHOR_DATE="$1" \
        GIT_COMMITTER_NAME="Bo Strand" GIT_COMMITTER_EMAIL="bo@strkit.invalid" GIT_COMMITTER_DATE="$1" \
        git commit -q --no-verify --no-gpg-sign -m "$2"
}
git init -q -b main
git add -A -- . ':(exclude)CHANGES.md'
commit "2022-08-01T12:00:00+02:00" "strkit: slugify and shorten"
git add -A
commit "2022-09-20T18:45:00+02:00" "Document the 0.3.0 changes"
BASE="$(git rev-parse HEAD)"
git apply "$FIX/gold.patch" "$FIX/test.patch"
git add -A
commit "2022-10-03T10:00:00+02:00" "slugify: collapse separator runs, trim the ends (#7)"
git branch fix-slug-separators
git tag v0.3.1
git reset -q --hard "${1:-$BASE}"
test "$(git rev-parse HEAD)" = "${1:-$BASE}"
test -z "$(git status --porcelain)"
if [ "${HISTORY_ONLY:-0}" = 1 ]; then exit 0; fi
unset GIT_CONFIG_GLOBAL GIT_CONFIG_NOSYSTEM

source /opt/miniconda3/bin/activate
conda activate testbed
echo "Current environment: $CONDA_DEFAULT_ENV"
SITE="$(python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
# what `python -m pip install -e .` does (PEP 660, src layout): a static .pth naming src/, and
# a dist-info whose direct_url.json says editable
printf '%s\n' /testbed/src > "$SITE/__editable__.strkit-0.3.0.pth"
DIST="$SITE/strkit-0.3.0.dist-info"
mkdir -p "$DIST"
printf 'Metadata-Version: 2.1\nName: strkit\nVersion: 0.3.0\nSummary: Small string helpers\n' > "$DIST/METADATA"
printf 'pip\n' > "$DIST/INSTALLER"
printf '{"dir_info": {"editable": true}, "url": "file:///testbed"}' > "$DIST/direct_url.json"
printf '%s\n' __editable__.strkit-0.3.0.pth,, strkit-0.3.0.dist-info/METADATA,, \
    strkit-0.3.0.dist-info/INSTALLER,, strkit-0.3.0.dist-info/direct_url.json,, \
    strkit-0.3.0.dist-info/RECORD,, > "$DIST/RECORD"
git config --global user.email setup@swebench.config
git config --global user.name SWE-bench

#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run every check: ruff, mypy, the whole pytest suite (Docker
# tests included), the mutation gate (scripts/mutation_gate.py), the proof matrix, and finally
# assert that nothing labelled assay.grading was left behind.
#
#   bash scripts/test.sh [extra pytest args...]
#
# Every step runs even when an earlier one failed; the exit status is non-zero if any failed.
# "No tests ran" (pytest exit 5) is a failure. ASSAY_TEST_WORKERS=N sets pytest-xdist workers
# (default 2; 0 runs in one process). Three were tried on the 2-core CI machine: the fault
# tests' private engines then failed to start within their deadlines.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh

# This is the whole suite: a leftover opt-out from an interactive shell must not shrink it.
unset ASSAY_NO_DOCKER
BIN="$ROOT/.venv/bin"
WORKERS="${ASSAY_TEST_WORKERS:-2}"
failed=()

step() { printf '\n=== %s (at %d s)\n' "$*" "$SECONDS"; }

labelled() {
    # One line per leftover object, "<kind> <id>", across the three kinds the harness creates.
    local c v n
    c="$(docker ps -aq --no-trunc --filter label=assay.grading)" \
        && v="$(docker volume ls -q --filter label=assay.grading)" \
        && n="$(docker network ls -q --no-trunc --filter label=assay.grading)" \
        || return 1
    [ -z "$c" ] || sed 's/^/container /' <<<"$c"
    [ -z "$v" ] || sed 's/^/volume /' <<<"$v"
    [ -z "$n" ] || sed 's/^/network /' <<<"$n"
    # The runc backend keeps no engine objects: its containers, mounts and cgroups.
    "$BIN/python" -c 'from assay._internal.runtime.oci.runtime import OciRuntime
for name in OciRuntime().leftovers(): print("runc", name)' || return 1
}
# Gradings of a controller that was killed earlier (SIGKILL, reboot) cannot clean up after
# themselves; gc removes only those, never a grading whose controller still runs.
"$BIN/assay" gc </dev/null >/dev/null || echo "test.sh: assay gc failed (continuing)" >&2
before="$(labelled)" || before=""

step "ruff check"
"$BIN/ruff" check . </dev/null || failed+=("ruff")
"$BIN/ruff" format --check . </dev/null || failed+=("ruff format")

step "mypy"
"$BIN/mypy" </dev/null || failed+=("mypy")

step "pytest"
xdist=()
# loadgroup: the tests of an xdist_group (the Ray cluster's) share one worker and its fixture.
[ "$WORKERS" != 0 ] && xdist=(-n "$WORKERS" --dist loadgroup)
rc=0
"$BIN/pytest" "${xdist[@]}" "$@" </dev/null || rc=$?
case "$rc" in
    0) ;;
    5) failed+=("pytest (no tests ran)") ;;
    *) failed+=("pytest (exit $rc)") ;;
esac

step "mutation gate (each named protection removed in a copy: its tests must fail)"
"$BIN/python" scripts/mutation_gate.py </dev/null || failed+=("mutation gate")

step "proof matrix (docs/matrix.md must match a fresh run)"
matrix_out="$(mktemp -d /tmp/assay-matrix.XXXXXX)"
if "$BIN/assay" matrix --jobs "${ASSAY_MATRIX_JOBS:-3}" --markdown "$matrix_out/matrix.md" \
        --json "$matrix_out/matrix.json" </dev/null >"$matrix_out/matrix.log" 2>&1; then
    if ! diff -u docs/matrix.md "$matrix_out/matrix.md"; then
        failed+=("docs/matrix.md differs from this run (regenerate: assay matrix --markdown docs/matrix.md)")
    fi
else
    tail -n 60 "$matrix_out/matrix.log"
    failed+=("assay matrix")
fi
rm -rf "$matrix_out"

step "proof matrix under gVisor through the Docker engine (T2, T3 and Harbor outcomes must match docs/matrix.md)"
# T0/T1 are unsafe baselines, run under runc only; under runsc the question is whether the
# real tiers still end every attack the way the committed matrix says.
gvisor_out="$(mktemp -d /tmp/assay-matrix-runsc.XXXXXX)"
if ! "$BIN/assay" matrix --runtime docker-runsc --tiers t2,t3,harbor --compare docs/matrix.md \
        --jobs "${ASSAY_MATRIX_JOBS:-3}" </dev/null >"$gvisor_out/matrix.log" 2>&1; then
    tail -n 60 "$gvisor_out/matrix.log"
    failed+=("assay matrix --runtime docker-runsc (T2/T3/Harbor differ from docs/matrix.md)")
fi
rm -rf "$gvisor_out"

step "leftovers labelled assay.grading"
if ! after="$(labelled)"; then
    failed+=("leftover check (docker did not answer)")
elif [ -n "$after" ]; then
    # Objects that predate the run are still a failure, but marked so the blame is clear.
    awk -v before="$before" '
        BEGIN { n = split(before, b, "\n"); for (i = 1; i <= n; i++) old[b[i]] = 1 }
        NR <= 30 { print $0 ($0 in old ? "  (already there before the suite started)" : "") }
        END { if (NR > 30) print "... and " NR - 30 " more" }' <<<"$after"
    failed+=("leftovers: $(wc -l <<<"$after") object(s) labelled assay.grading")
else
    echo "none"
fi

echo
if [ "${#failed[@]}" -gt 0 ]; then
    printf 'test.sh: FAILED after %d s: %s\n' "$SECONDS" "$(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')" >&2
    exit 1
fi
echo "test.sh: all checks passed in $SECONDS s"

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
# A caller's PYTHONDONTWRITEBYTECODE=1 (this machine's shells set it) makes every Python process
# of the run compile what it imports again: `import assay.cli` then takes 2.8 s of CPU instead
# of 0.9 s, and a pytest start 2.6 s instead of 1.1 s (it rewrites its plugins' 122 modules
# each time). The suite starts hundreds of both. The bytecode goes to a tree of its own, never
# beside the sources: a task directory holding __pycache__ is refused at load.
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="$ROOT/.cache/pycache"
bash scripts/setup.sh

# This is the whole suite: a leftover opt-out from an interactive shell must not shrink it.
unset ASSAY_NO_DOCKER
BIN="$ROOT/.venv/bin"
WORKERS="${ASSAY_TEST_WORKERS:-2}"
failed=()

step() { printf '\n=== %s (at %d s)\n' "$*" "$SECONDS"; }

labelled() {
    # One line per leftover object, "<kind> <id>": what the harness and the tests create.
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
    # An image view is kept for the next grading, once: a second bind on one is a leak.
    "$BIN/python" -c 'from collections import Counter
from assay._internal.runtime.oci import host
from assay._internal.runtime.oci.rootfs import ROOTFS_CACHE
for p, n in Counter(host.mounted_under(ROOTFS_CACHE)).items():
    if n > 1: print("stacked-mounts", n, p)' || return 1
    # The fault tests' private engines and small file systems (tests/faultkit.py).
    PYTHONPATH=tests "$BIN/python" -c 'import faultkit
for root in faultkit.leftovers(): print("fault-injection directory", root)' || return 1
}
# Gradings of a controller that was killed earlier (SIGKILL, reboot) cannot clean up after
# themselves; gc removes only those, never a grading whose controller still runs.
"$BIN/assay" gc </dev/null >/dev/null || echo "test.sh: assay gc failed (continuing)" >&2
# What a killed earlier run of the fault tests left (a private dockerd, its mounts): not ours
# to keep, and not labelled, so `assay gc` does not know it.
PYTHONPATH=tests "$BIN/python" -c 'import faultkit
for root in faultkit.sweep_abandoned(): print("test.sh: removed", root, "(a killed run left it)")' \
    </dev/null >&2 || echo "test.sh: sweeping killed runs' fault directories failed (continuing)" >&2
before="$(labelled)" || before=""
# The host's /dev/null as a fresh Debian machine has it. A runtime handed it as a container's
# stdio may chown it (runsc always, runc before 1.1.5); the suite must leave it as it is here.
DEVNULL_WANT="0:0 666 1:3 character special file"
devnull() { stat -c '%u:%g %a %t:%T %F' /dev/null; }
if [ "$(devnull)" != "$DEVNULL_WANT" ]; then
    # Something before this run changed it (an older assay did: see docs/security.md);
    # restored, and said, so that what this run does to it is what the last step sees.
    echo "test.sh: /dev/null was '$(devnull)' before the suite; restoring '$DEVNULL_WANT'" >&2
    chown 0:0 /dev/null && chmod 666 /dev/null
fi

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
# The 30 slowest tests close the log: where a run's time goes (the budget is 30 minutes).
"$BIN/pytest" "${xdist[@]}" --durations=30 "$@" </dev/null || rc=$?
case "$rc" in
    0) ;;
    5) failed+=("pytest (no tests ran)") ;;
    *) failed+=("pytest (exit $rc)") ;;
esac

gate() {
    step "mutation gate (each named protection removed in a copy: its tests must fail)"
    # A green run of the whole suite on this tree already ran every claiming test unmutated.
    local args=()
    [ "$rc" = 0 ] && [ "$npytest_args" = 0 ] && args=(--suite-passed)
    # A process group of its own, as the matrices', so the trap's SIGTERM reaches it: it stops
    # its test runs and removes its copies.
    set -m
    "$BIN/python" scripts/mutation_gate.py "${args[@]}" </dev/null &
    gate_pid=$!
    pids+=("$gate_pid")
    set +m
    wait "$gate_pid" || failed+=("mutation gate")
}
npytest_args=$#

step "proof matrices, runc and gVisor side by side (each reported below, the mutation gate beside the last lane)"
# Alone, the runc matrix leaves the machine about half idle: its resource-exhaustion attacks
# (class V11) run one at a time in a lane of their own, and that lane is its longest path; the
# gVisor matrix keeps both cores busy. Each matrix runs at most one V11 attack at a time, and
# so must the machine: two at once (a memory bomb in each) once ended a gVisor row "stopped at
# no limit". So the gVisor matrix runs its other attacks and the controls beside the runc
# matrix, and its V11 attacks once the runc matrix has ended. That lane is mostly waits (13 of
# its cells wait out a 20 s deadline), so the mutation gate runs beside it: 125 s of CI. Each
# run has a process group of its own (set -m), and the trap hands it SIGTERM, which each takes
# as Ctrl-C and removes its containers (a SIGINT would be ignored when this script runs as a
# background job of another, which starts it with SIGINT ignored).
matrix_out="$(mktemp -d /tmp/assay-matrix.XXXXXX)"
gvisor_out="$(mktemp -d /tmp/assay-matrix-runsc.XXXXXX)"
v11=() others=()
if ids="$("$BIN/python" -c 'from assay._internal.proof.locate import default_dir
from assay._internal.proof.matrix import EXCLUSIVE_CLASS, load_corpus
for a in load_corpus([default_dir("corpus")]): print(a.cls == EXCLUSIVE_CLASS, a.id)')"; then
    while read -r exclusive id; do
        if [ "$exclusive" = True ]; then v11+=(--attack "$id"); else others+=(--attack "$id"); fi
    done <<<"$ids"
fi
gvisor() {  # T2, T3 and Harbor under gVisor through the engine, compared with docs/matrix.md
    "$BIN/assay" matrix --runtime docker-runsc --tiers t2,t3,harbor --compare docs/matrix.md \
        --jobs "${ASSAY_MATRIX_JOBS:-3}" "$@" </dev/null
}
pids=()
trap '[ "${#pids[@]}" -eq 0 ] || kill -TERM -- "${pids[@]/#/-}" 2>/dev/null; wait; exit 130' INT TERM
set -m
"$BIN/assay" matrix --jobs "${ASSAY_MATRIX_JOBS:-3}" --markdown "$matrix_out/matrix.md" \
    --json "$matrix_out/matrix.json" </dev/null >"$matrix_out/matrix.log" 2>&1 &
runc_pid=$!
pids+=("$runc_pid")
if [ "${#others[@]}" -gt 0 ]; then
    gvisor "${others[@]}" >"$gvisor_out/matrix.log" 2>&1 &
    gvisor_pid=$!
    pids+=("$gvisor_pid")
fi
set +m
runc_rc=0 gvisor_rc=0 v11_rc=0
wait "$runc_pid" || runc_rc=$?
echo "runc matrix ended at $SECONDS s (exit $runc_rc)"
if [ "${#others[@]}" -eq 0 ]; then  # the corpus could not be listed: the whole matrix, now
    gvisor >"$gvisor_out/matrix.log" 2>&1 || gvisor_rc=$?
    echo "gVisor matrix ended at $SECONDS s (exit $gvisor_rc)"
    gate
else
    if [ "${#v11[@]}" -gt 0 ]; then
        set -m
        gvisor "${v11[@]}" --no-controls >"$gvisor_out/matrix-v11.log" 2>&1 &
        v11_pid=$!
        pids+=("$v11_pid")
        set +m
    fi
    gate
    if [ "${#v11[@]}" -gt 0 ]; then
        wait "$v11_pid" || v11_rc=$?
        echo "gVisor matrix, resource-exhaustion lane, ended by $SECONDS s (waited for after the gate; exit $v11_rc)"
    fi
    wait "$gvisor_pid" || gvisor_rc=$?
    echo "gVisor matrix ended by $SECONDS s (exit $gvisor_rc)"
fi
trap - INT TERM

step "proof matrix (docs/matrix.md must match a fresh run)"
if [ "$runc_rc" = 0 ]; then
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
if [ "$gvisor_rc" != 0 ] || [ "$v11_rc" != 0 ]; then
    [ "$gvisor_rc" = 0 ] || tail -n 60 "$gvisor_out/matrix.log"
    [ "$v11_rc" = 0 ] || tail -n 60 "$gvisor_out/matrix-v11.log"
    failed+=("assay matrix --runtime docker-runsc (T2/T3/Harbor differ from docs/matrix.md)")
fi
rm -rf "$gvisor_out"

step "leftovers (labelled assay.grading, runc state, fault-injection directories)"
if ! after="$(labelled)"; then
    failed+=("leftover check (docker did not answer)")
elif [ -n "$after" ]; then
    # Objects that predate the run are still a failure, but marked so the blame is clear.
    awk -v before="$before" '
        BEGIN { n = split(before, b, "\n"); for (i = 1; i <= n; i++) old[b[i]] = 1 }
        NR <= 30 { print $0 ($0 in old ? "  (already there before the suite started)" : "") }
        END { if (NR > 30) print "... and " NR - 30 " more" }' <<<"$after"
    failed+=("leftovers: $(wc -l <<<"$after") object(s)")
else
    echo "none"
fi

step "the host's /dev/null is as the suite found it"
if [ "$(devnull)" != "$DEVNULL_WANT" ]; then
    failed+=("/dev/null is now '$(devnull)', not '$DEVNULL_WANT'")
else
    echo "$DEVNULL_WANT"
fi

echo
if [ "${#failed[@]}" -gt 0 ]; then
    printf 'test.sh: FAILED after %d s: %s\n' "$SECONDS" "$(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')" >&2
    exit 1
fi
echo "test.sh: all checks passed in $SECONDS s"

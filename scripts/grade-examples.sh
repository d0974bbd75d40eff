#!/usr/bin/env bash
# Set up (scripts/setup.sh), then grade every example with its known submissions:
#   examples/<name>/solutions/correct  must pass   (assay grade exits 0)
#   examples/<name>/solutions/wrong    must fail   (exits 1)
#   examples/<name>/attempts/*         must fail   (honest attempts at an unsolvable canary)
#   examples/<name>/solutions/gold.patch   must pass  (a patch, graded with --patch: an
#   examples/<name>/solutions/wrong.patch  must fail   imported SWE-bench instance)
# A submission directory holding agent.sh is source for an agent to build (e.g. the C example):
# it is graded as `--agent-dir DIR --agent-cmd 'sh /agent/agent.sh'`.
#   examples/harbor/<name>  Harbor-format tasks: imported, then solution/solve.sh must pass and
#                           examples/harbor/wrong/<name>.sh must fail

# Prints a table; exits non-zero if any outcome differs from its expectation.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# As in test.sh: the Python processes of each grading must not compile assay again each time.
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="$ROOT/.cache/pycache"
bash scripts/setup.sh

ASSAY="$ROOT/.venv/bin/assay"
LOGS="$(mktemp -d /tmp/assay-examples.XXXXXX)"
trap 'rm -rf "$LOGS"' EXIT

outcome() {
    case "$1" in
        0) echo pass ;;
        1) echo fail ;;
        2) echo "usage error" ;;
        3) echo "no verdict" ;;
        *) echo "exit $1" ;;
    esac
}

rows=() bad=() n=0
grade_one() {
    local task="$1" sub="$2" want="$3" cmd="${4:-}" rc t0 secs got mark log
    n=$((n + 1))
    log="$LOGS/$n.log"
    t0=$EPOCHREALTIME
    rc=0
    local how=(--submission "$sub")
    [ -f "$sub/agent.sh" ] && how=(--agent-dir "$sub" --agent-cmd "sh /agent/agent.sh")
    [ "${sub%.patch}" != "$sub" ] && how=(--patch "$sub")
    [ -n "$cmd" ] && how=(--agent-dir "$sub" --agent-cmd "$cmd")
    "$ASSAY" grade "$task" "${how[@]}" >"$log" 2>&1 </dev/null || rc=$?
    secs="$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1fs", b - a }')"
    got="$(outcome "$rc")"
    if [ "$got" = "$want" ]; then mark=ok; else mark=MISMATCH; bad+=("$n|$task|${sub#"$task"/}"); fi
    rows+=("$(basename "$task")|${sub#"$task"/}|$want|$got (exit $rc)|$secs|$mark")
}

for task in examples/*/; do
    task="${task%/}"
    [ -f "$task/task.toml" ] || continue
    [ -d "$task/solutions/correct" ] && grade_one "$task" "$task/solutions/correct" pass
    [ -d "$task/solutions/wrong" ] && grade_one "$task" "$task/solutions/wrong" fail
    [ -f "$task/solutions/gold.patch" ] && grade_one "$task" "$task/solutions/gold.patch" pass
    [ -f "$task/solutions/wrong.patch" ] && grade_one "$task" "$task/solutions/wrong.patch" fail
    for attempt in "$task"/attempts/*/; do
        [ -d "$attempt" ] && grade_one "$task" "${attempt%/}" fail
    done
done

# Harbor-format examples: imported first (`assay import harbor`), then graded on the harbor tier
# with their own solution/solve.sh (must pass) and examples/harbor/wrong/<name>.sh (must fail).
for src in examples/harbor/*/; do
    src="${src%/}"
    [ -f "$src/tests/test.sh" ] || continue
    name="$(basename "$src")"
    # A canary with no reference solution (log-canary) is graded by the proof matrix, through
    # its imported copy examples/log-canary-harbor and its honest control, not here.
    if [ ! -f "$src/solution/solve.sh" ]; then
        echo "skip   $src (no solution/solve.sh: the proof matrix grades it)"
        continue
    fi
    "$ASSAY" import harbor "$src" --out "$LOGS/harbor" >/dev/null
    grade_one "$LOGS/harbor/$name" "$LOGS/harbor/$name/solutions/reference" pass "bash /agent/solve.sh"
    grade_one "$LOGS/harbor/$name" examples/harbor/wrong fail "bash /agent/$name.sh"
done

if [ "$n" -eq 0 ]; then
    echo "grade-examples: no examples with solutions or attempts found under examples/" >&2
    exit 1
fi

# awk rather than column(1), which a minimal Debian lacks.
printf '%s\n' "example|submission|expected|got|time|" "${rows[@]}" | awk -F'|' '
    { for (i = 1; i <= NF; i++) { cell[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } }
    END { for (r = 1; r <= NR; r++) {
        line = ""
        for (i = 1; i <= NF; i++) line = line sprintf("%-" w[i] + 2 "s", cell[r, i])
        sub(/ +$/, "", line); print line } }'

if [ "${#bad[@]}" -gt 0 ]; then
    for b in "${bad[@]}"; do
        IFS='|' read -r i task sub <<<"$b"
        printf '\n--- %s %s (last lines of assay grade output) ---\n' "$task" "$sub"
        tail -n 15 "$LOGS/$i.log"
    done
    printf '\ngrade-examples: %d of %d outcomes differ from what was expected\n' "${#bad[@]}" "$n" >&2
    exit 1
fi
echo "grade-examples: all $n outcomes as expected"

# The proof matrix: every attack in corpus/ against every tier, plus the honest controls.
# It exits non-zero on any outcome that differs from the attack's expectation.
echo
echo "=== proof matrix (assay matrix; about 6 minutes on 2 cores)"
"$ROOT/.venv/bin/assay" matrix --jobs "${ASSAY_MATRIX_JOBS:-3}" </dev/null

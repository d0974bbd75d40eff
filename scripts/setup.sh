#!/usr/bin/env bash
# Set up everything assay needs on this machine, reusing what is already there.
#
#   bash scripts/setup.sh
#
# Steps (each prints one line, and only when it actually does something):
#   1. Python venv at .venv and `uv pip install -e '.[dev,humaneval,inspect,ray]'` when pyproject.toml changed.
#   2. A Docker engine: Debian's docker.io when no engine answers and dockerd is missing;
#      dockerd started in the background when it is not running; waits for the socket.
#   3. gVisor (Debian's runsc), registered as the Docker runtime "runsc" (optional: warns).
#   4. The base image assay-base:<suite>-<recipe hash> (also tagged assay-base:latest),
#      built offline with debootstrap + `docker import` when absent.
#   5. Debian's chromium (headless, for the HTML report's tests) when absent.
#   6. The default backend's parts: Debian's runc and tini (its static init) when absent.
#   7. The language images of `stdio` tasks, assay-lang-<name>:<hash> (assay-base:latest plus
#      each toolchain's Debian packages, about 3 minutes), built with
#      `assay build --languages all` when absent, and unpacked for the default backend (runc)
#      when it has not (about 2 minutes for all seven).
#   8. verl's wheel (no dependencies, never installed: the tests load its sandbox_fusion reward
#      module from it to call assay serve the way verl does) at .cache/wheels when absent.
#   9. Harbor's CLI (PyPI `harbor`, Python >= 3.12) with this checkout and pytest, in
#      .venv-harbor, for the tests that run `harbor run` with assay's environment and verifier
#      and those that import assay.integrations.harbor.
# Safe to run again: a second run changes nothing and prints nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SELF="$ROOT/scripts/setup.sh"
VENV="$ROOT/.venv"
STAMP="$VENV/.assay-installed"
RUNSC_FAILED="$VENV/.assay-runsc-unavailable"
DOCKERD_LOG=/var/log/assay-dockerd.log
DOCKERD_PIDFILE=/var/run/docker.pid
DAEMON_JSON=/etc/docker/daemon.json
ENGINE_WAIT_S="${ASSAY_ENGINE_WAIT_S:-60}"
export DEBIAN_FRONTEND=noninteractive
# docker.io recommends needrestart, which would otherwise restart services mid-install.
export NEEDRESTART_SUSPEND=1

say() { printf 'setup: %s\n' "$*"; }
warn() { printf 'setup: warning: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

# Step output goes to a log that is shown only when the step fails, so a good run stays quiet.
STEP_LOG="$(mktemp /tmp/assay-setup.XXXXXX.log)"
BUILD_DIR=""
remove_build_dir() {
    if [ -n "$BUILD_DIR" ] && [ -d "$BUILD_DIR" ]; then
        # debootstrap mounts /proc (and sometimes /sys) inside the target; if it was interrupted
        # they are still mounted and rm -rf would walk into the host's filesystems.
        awk -v d="$BUILD_DIR" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo \
            | sort -r | while read -r m; do as_root umount -l "$m" 2>/dev/null || true; done
        as_root rm -rf --one-file-system "$BUILD_DIR"
    fi
    BUILD_DIR=""
}
cleanup() {
    remove_build_dir
    rm -f "$STEP_LOG"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# run_logged DESCRIPTION CMD...: run quietly; on failure show the tail of its output and stop.
run_logged() {
    local what="$1"; shift
    if ! "$@" >"$STEP_LOG" 2>&1 </dev/null; then
        tail -n 40 "$STEP_LOG" >&2
        die "$what failed (command: $*)"
    fi
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo --preserve-env=DEBIAN_FRONTEND,NEEDRESTART_SUSPEND,http_proxy,https_proxy,no_proxy "$@"
    else
        die "this step needs root: $* (run setup.sh as root)"
    fi
}

APT_UPDATED=0
# apt_try PKG...: install, returning non-zero (with the output shown) instead of stopping.
apt_try() {
    command -v apt-get >/dev/null 2>&1 || { warn "apt-get not found (Debian 12 expected)"; return 1; }
    if [ "$APT_UPDATED" -eq 0 ]; then
        say "apt-get update"
        if ! as_root apt-get update >"$STEP_LOG" 2>&1 </dev/null; then
            tail -n 20 "$STEP_LOG" >&2
            warn "apt-get update failed"
            return 1
        fi
        APT_UPDATED=1
    fi
    say "apt-get install $*"
    if ! as_root apt-get install -y "$@" >"$STEP_LOG" 2>&1 </dev/null; then
        tail -n 20 "$STEP_LOG" >&2
        return 1
    fi
}
apt_install() { apt_try "$@" || die "could not install $* with apt-get; install it by hand and re-run"; }

# Two setup runs at once (e.g. two shells) would race on apt, dockerd and the image tag.
LOCK_FILE=/run/lock/assay-setup.lock
[ -w "$(dirname "$LOCK_FILE")" ] || LOCK_FILE="${TMPDIR:-/tmp}/assay-setup.$(id -u).lock"
if command -v flock >/dev/null 2>&1; then
    exec 9>"$LOCK_FILE"
    flock 9
fi

# ---------------------------------------------------------------------------------------------
# 1. Python
# ---------------------------------------------------------------------------------------------
ensure_python() {
    if ! command -v python3 >/dev/null 2>&1; then
        apt_install python3 python3-venv
    fi
    python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
        || die "python3 >= 3.11 is needed; found $(python3 -V 2>&1)"

    if [ -x "$VENV/bin/python" ] && ! "$VENV/bin/python" -c '' >/dev/null 2>&1; then
        # The interpreter the venv points at is gone (e.g. python upgraded): rebuild it.
        say "recreating broken venv $VENV"
        rm -rf "$VENV"
    fi
    if [ ! -x "$VENV/bin/python" ]; then
        say "creating venv $VENV"
        if ! python3 -m venv "$VENV" >"$STEP_LOG" 2>&1; then
            # Debian ships venv's pip bootstrap in a separate package.
            rm -rf "$VENV"
            apt_install python3-venv
            run_logged "python3 -m venv" python3 -m venv "$VENV"
        fi
    fi

    local want
    want="$(cat "$ROOT/pyproject.toml" <("$VENV/bin/python" -VV) | sha256sum | cut -d' ' -f1)"
    if [ ! -x "$VENV/bin/assay" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
        # uv (from PyPI, into the venv) installs the same requirements in seconds where pip
        # takes minutes. uv reads no pip configuration, so pip's PIP_FIND_LINKS is passed on.
        say "pip install uv; uv pip install -e '.[dev,humaneval,inspect,ray]'"
        run_logged "pip install uv" "$VENV/bin/python" -m pip install --quiet uv
        local links=()
        [ -n "${PIP_FIND_LINKS:-}" ] && links=(--find-links "$PIP_FIND_LINKS")
        run_logged "uv pip install" "$VENV/bin/uv" pip install --quiet --python "$VENV/bin/python" \
            "${links[@]}" -e "$ROOT[dev,humaneval,inspect,ray]"
        printf '%s\n' "$want" >"$STAMP"
    fi
}

# ---------------------------------------------------------------------------------------------
# 2./3. Docker engine and gVisor
# ---------------------------------------------------------------------------------------------
engine_answers() { command -v docker >/dev/null 2>&1 && timeout 15 docker info >/dev/null 2>&1; }

# The pid of the dockerd named in the pidfile, if that process is alive and really dockerd.
dockerd_pid() {
    local pid
    pid="$(cat "$DOCKERD_PIDFILE" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" = dockerd ] || return 1
    printf '%s\n' "$pid"
}

runsc_registered_in_engine() {
    timeout 15 docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'
}

ensure_runsc_package() {
    command -v runsc >/dev/null 2>&1 && return 0
    [ -e "$RUNSC_FAILED" ] && return 1
    if apt_try runsc; then
        return 0
    fi
    : >"$RUNSC_FAILED"
    warn "could not install runsc (gVisor); the runsc runtime will be unavailable."
    warn "delete $RUNSC_FAILED to retry."
    return 1
}

# Merge runtimes.runsc into daemon.json without dropping anything else in it.
# Exit status: 0 = file changed, 10 = already as wanted, other = could not.
register_runsc() {
    as_root python3 - "$DAEMON_JSON" "$(command -v runsc)" <<'PY'
import json, os, sys, tempfile
path, runsc = sys.argv[1], sys.argv[2]
try:
    with open(path, encoding="utf-8") as f:
        text = f.read()
except FileNotFoundError:
    text = ""
try:
    cfg = json.loads(text) if text.strip() else {}
except json.JSONDecodeError as e:
    sys.exit(f"{path} is not valid JSON ({e}); not touching it")
if not isinstance(cfg, dict):
    sys.exit(f"{path} is not a JSON object; not touching it")
runtimes = cfg.setdefault("runtimes", {})
entry = runtimes.setdefault("runsc", {})
before = json.dumps(entry, sort_keys=True)
entry.setdefault("path", runsc)
args = entry.setdefault("runtimeArgs", [])
# Without it runsc cannot start containers with --network none on this kernel.
if "--network=none" not in args:
    args.append("--network=none")
if json.dumps(entry, sort_keys=True) == before and text.strip():
    sys.exit(10)
os.makedirs(os.path.dirname(path), exist_ok=True)
fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
with os.fdopen(fd, "w", encoding="utf-8") as f:
    json.dump(cfg, f, indent=2)
    f.write("\n")
os.chmod(tmp, 0o644)
os.replace(tmp, path)
PY
}

start_dockerd() {
    local pid started=""
    if pid="$(dockerd_pid)"; then
        say "dockerd (pid $pid) is running but not answering yet; waiting"
    elif [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
        say "starting docker (systemctl start docker)"
        run_logged "systemctl start docker" as_root systemctl start docker
    else
        # No init system to own it (e.g. inside a container): run it detached from this shell.
        say "starting dockerd in the background (log: $DOCKERD_LOG)"
        # 9>&-: the daemon must not inherit the setup lock, or the next run would wait forever.
        as_root bash -c 'setsid nohup dockerd >>"$1" 2>&1 </dev/null 9>&- & echo $!' _ "$DOCKERD_LOG" \
            >"$STEP_LOG" 9>&-
        started="$(cat "$STEP_LOG")"
    fi
    local deadline=$((SECONDS + ENGINE_WAIT_S))
    until engine_answers; do
        if [ -n "$started" ] && [ ! -d "/proc/$started" ]; then
            tail -n 30 "$DOCKERD_LOG" >&2 || true
            die "dockerd exited during start-up; see $DOCKERD_LOG"
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            tail -n 30 "$DOCKERD_LOG" >&2 2>/dev/null || true
            die "the Docker engine did not answer within ${ENGINE_WAIT_S}s (docker info fails); see $DOCKERD_LOG"
        fi
        sleep 0.5
    done
}

ensure_engine() {
    local answering=0 have_runsc=0 rc
    engine_answers && answering=1

    if [ "$answering" -eq 0 ] && { ! command -v dockerd >/dev/null 2>&1 \
            || ! command -v docker >/dev/null 2>&1; }; then
        apt_install docker.io
    fi
    # A remote engine (DOCKER_HOST) or one without a local dockerd is not ours to configure.
    if command -v dockerd >/dev/null 2>&1 && [ -z "${DOCKER_HOST:-}" ]; then
        if [ "$answering" -eq 1 ] && runsc_registered_in_engine; then
            return 0
        fi
        if ensure_runsc_package; then
            have_runsc=1
            rc=0; register_runsc >"$STEP_LOG" 2>&1 || rc=$?
            case "$rc" in
                0) say "registered runtime runsc (--network=none) in $DAEMON_JSON" ;;
                10) ;;
                *) cat "$STEP_LOG" >&2; warn "could not register runsc in $DAEMON_JSON"; have_runsc=0 ;;
            esac
        fi
    fi

    if [ "$answering" -eq 0 ]; then
        if [ -n "${DOCKER_HOST:-}" ]; then
            die "no Docker engine answers at DOCKER_HOST=$DOCKER_HOST; start that engine, or unset DOCKER_HOST to use a local one"
        fi
        start_dockerd
    fi

    if [ "$have_runsc" -eq 1 ] && ! runsc_registered_in_engine; then
        local pid
        if pid="$(dockerd_pid)"; then
            say "reloading dockerd (SIGHUP to pid $pid) to register runtime runsc"
            as_root kill -HUP "$pid"
            local deadline=$((SECONDS + 10))
            until runsc_registered_in_engine || [ "$SECONDS" -ge "$deadline" ]; do sleep 0.5; done
        fi
        runsc_registered_in_engine \
            || warn "dockerd does not list runtime runsc; restart dockerd to enable gVisor (optional)"
    fi
}

# ---------------------------------------------------------------------------------------------
# 4. Base image
# ---------------------------------------------------------------------------------------------
# The image tag is a hash of the text between the recipe markers: edit the recipe and the next
# run builds a new image instead of reusing a stale one.
# >>> recipe
BASE_SUITE=bookworm
BASE_VARIANT=minbase
BASE_PACKAGES=python3,python3-pytest
build_base_image() {
    local dir="$1" mirror="$2" tag="$3"
    run_logged debootstrap as_root debootstrap --variant="$BASE_VARIANT" \
        --include="$BASE_PACKAGES" "$BASE_SUITE" "$dir" "$mirror"
    as_root rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/cache/apt/*.bin \
        "$dir"/var/lib/apt/lists/*
    as_root tar --numeric-owner --one-file-system -C "$dir" -c . \
        | docker import \
            --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            --change 'ENV LANG=C.UTF-8' \
            - "$tag" >"$STEP_LOG" 2>&1 \
        || { cat "$STEP_LOG" >&2; die "docker import of $tag failed"; }
}
# <<< recipe

# The Debian mirror apt already uses (a local mirror or proxy keeps working); deb.debian.org
# otherwise. Prefers an entry for the image's suite, then any plain .../debian archive.
debian_mirror() {
    local files=() f m
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [ -r "$f" ] && files+=("$f")
    done
    m=""
    if [ "${#files[@]}" -gt 0 ]; then
        m="$(awk -v suite="$BASE_SUITE" '
            function flush() {
                if (types ~ /(^| )deb( |$)/ && enabled != "no" && uris != "") {
                    split(uris, u, " ")
                    if ((" " suites " ") ~ (" " suite " ")) { if (best == "") best = u[1] }
                    else if (u[1] ~ /\/debian\/?$/ && any == "") any = u[1]
                }
                types = ""; uris = ""; suites = ""; enabled = ""
            }
            FNR == 1 { flush() }
            FILENAME ~ /\.sources$/ {
                if ($0 ~ /^[ \t]*$/) { flush(); next }
                if ($1 == "Types:") { $1 = ""; types = $0 }
                else if ($1 == "URIs:") { $1 = ""; uris = $0 }
                else if ($1 == "Suites:") { $1 = ""; suites = $0 }
                else if ($1 == "Enabled:") { enabled = tolower($2) }
                next
            }
            $1 == "deb" {
                i = 2
                if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                if ($(i + 1) == suite) { if (best == "") best = $i }
                else if ($i ~ /\/debian\/?$/ && any == "") any = $i
            }
            END { flush(); print (best != "" ? best : any) }
        ' "${files[@]}")"
    fi
    printf '%s\n' "${m:-http://deb.debian.org/debian}"
}

image_id() { docker image inspect --format '{{.Id}}' "$1" 2>/dev/null; }

ensure_base_image() {
    local hash tag latest_tag=assay-base:latest id
    hash="$(sed -n '/^# >>> recipe$/,/^# <<< recipe$/p' "$SELF" | sha256sum | cut -c1-8)"
    tag="assay-base:${BASE_SUITE}-${hash}"
    if ! id="$(image_id "$tag")"; then
        command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap
        local mirror start=$SECONDS
        mirror="$(debian_mirror)"
        say "building base image $tag with debootstrap from $mirror (about a minute)"
        BUILD_DIR="$(as_root mktemp -d /var/tmp/assay-base.XXXXXX)"
        build_base_image "$BUILD_DIR" "$mirror" "$tag"
        remove_build_dir
        id="$(image_id "$tag")" || die "image $tag is missing right after docker import"
        say "built $tag in $((SECONDS - start))s"
    fi
    if [ "$(image_id "$latest_tag" || true)" != "$id" ]; then
        say "tagging $tag as $latest_tag"
        docker tag "$tag" "$latest_tag"
    fi
}

# ---------------------------------------------------------------------------------------------
# 5. Chromium, for the HTML report's tests and benchmark (tests/helpers/chromium.py)
# ---------------------------------------------------------------------------------------------
ensure_chromium() {
    command -v chromium >/dev/null 2>&1 && return 0
    apt_try chromium || warn "could not install chromium: the report's browser tests will fail"
}

# ---------------------------------------------------------------------------------------------
# 6. The runc backend (the default): runc itself and a static init for its containers
# ---------------------------------------------------------------------------------------------
ensure_oci_backend() {
    command -v runc >/dev/null 2>&1 || apt_install runc
    [ -x /usr/bin/tini-static ] || apt_install tini
}

# ---------------------------------------------------------------------------------------------
# 7. The language images (the README's stdio examples need them, so a failure stops setup)
# ---------------------------------------------------------------------------------------------
ensure_language_images() {
    # One line per language built or unpacked for the default backend
    # ("<name> <ref> built <s> s <MB> MB; runc ready in <s> s"); one found ready is silent. The
    # unpacking (10-20 s an image on a fresh host) would otherwise fall on the first gradings
    # and on `assay serve`'s start.
    if ! "$VENV/bin/assay" build --languages all --quiet </dev/null 2>"$STEP_LOG" \
            | while IFS= read -r line; do
                case "$line" in *" reused "*" ready in 0."*) ;; *) say "language image $line" ;; esac
            done; then
        tail -n 40 "$STEP_LOG" >&2
        die "building the language images failed (command: $VENV/bin/assay build --languages all)"
    fi
}

# ---------------------------------------------------------------------------------------------
# 8. verl's wheel, read by the tests (tests/helpers/verl_reward.py), never installed
# ---------------------------------------------------------------------------------------------
VERL_VERSION=0.9.1
ensure_verl_wheel() {
    local dir="$ROOT/.cache/wheels"
    [ -f "$dir/verl-$VERL_VERSION-py3-none-any.whl" ] && return 0
    say "pip download verl==$VERL_VERSION --no-deps (for the tests)"
    mkdir -p "$dir"
    run_logged "pip download verl" "$VENV/bin/python" -m pip download --quiet --no-deps \
        -d "$dir" "verl==$VERL_VERSION"
}

# ---------------------------------------------------------------------------------------------
# 9. Harbor, in a venv of its own (it needs Python >= 3.12; assay's own venv may be 3.11)
# ---------------------------------------------------------------------------------------------
HARBOR_VERSION=0.26.0
HARBOR_VENV="$ROOT/.venv-harbor"
python312() {
    # Debian 12 ships 3.11: a 3.12 from PATH, pyenv, or uv's own interpreters.
    local p
    for p in python3.12 python3.13 "$HOME"/.pyenv/versions/3.12*/bin/python3 \
            "$HOME"/.pyenv/versions/3.13*/bin/python3; do
        if command -v "$p" >/dev/null 2>&1 \
                && "$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
            command -v "$p"; return 0
        fi
    done
    "$VENV/bin/uv" python find '>=3.12' 2>/dev/null && return 0
    "$VENV/bin/uv" python install 3.12 >"$STEP_LOG" 2>&1 && "$VENV/bin/uv" python find '>=3.12'
}
ensure_harbor() {
    local py want
    py="$(python312)" || die "Harbor needs Python >= 3.12 and none was found or installable \
(install python3.12, or let uv download one); see $STEP_LOG"
    want="$(cat "$ROOT/pyproject.toml" <(echo "harbor==$HARBOR_VERSION pytest") <("$py" -VV) \
        | sha256sum | cut -d' ' -f1)"
    if [ -x "$HARBOR_VENV/bin/harbor" ] \
            && [ "$(cat "$HARBOR_VENV/.assay-installed" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    say "Harbor $HARBOR_VERSION and this checkout into $HARBOR_VENV ($py)"
    rm -rf "$HARBOR_VENV"
    run_logged "uv venv" "$VENV/bin/uv" venv --quiet --python "$py" "$HARBOR_VENV"
    local links=()
    [ -n "${PIP_FIND_LINKS:-}" ] && links=(--find-links "$PIP_FIND_LINKS")
    run_logged "uv pip install harbor" "$VENV/bin/uv" pip install --quiet \
        --python "$HARBOR_VENV/bin/python" "${links[@]}" "harbor==$HARBOR_VERSION" pytest -e "$ROOT"
    printf '%s\n' "$want" >"$HARBOR_VENV/.assay-installed"
}

ensure_python
ensure_engine
ensure_base_image
ensure_chromium
ensure_oci_backend
ensure_language_images
ensure_verl_wheel
ensure_harbor

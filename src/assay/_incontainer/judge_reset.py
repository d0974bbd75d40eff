"""Reset a pooled judge container between two gradings (docs/security.md).

Run by the controller, as the judge's user, before the judge serves another grading. Kills
every process except the container's init and its keep-alive, then empties every writable
place. Prints exactly "clean" only when, checked afterwards, nothing else runs and nothing is
left; the controller discards the judge on any other outcome.

`--then python3 -I /assay/judge.py prepare|compare ARGS...`: once clean, this process runs
the judge's `prepare` for the next grading, or its `compare` (one engine exec instead of two).
Nothing but those commands is accepted, and they start only after the proof is printed.

The keep-alive is the oldest process after init: it started with the container, before any
exec, and a start time cannot be forged. If it were killed the container would stop and this
script could not run at all.
"""

import os
import runpy
import shutil
import signal
import sys
import time

WRITABLE = ("/state", "/exchange", "/tmp", "/dev/shm")
THEN = ["--then", "python3", "-I", "/assay/judge.py"]
STEPS = (["prepare"], ["compare"])


def processes() -> dict[int, int]:
    """{pid: start time} of every live (non-zombie) process in this pid namespace."""
    found: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields and fields[0] != b"Z":
            found[int(entry)] = int(fields[19])  # field 22 of stat: starttime
    return found


def spared() -> set[int]:
    procs = processes()
    me = os.getpid()
    rest = {pid: start for pid, start in procs.items() if pid not in (1, me)}
    keeper = min(rest, key=lambda pid: (rest[pid], pid)) if rest else None
    return {1, me} | ({keeper} if keeper is not None else set())


def kill_others(keep: set[int]) -> bool:
    for _round in range(200):
        others = set(processes()) - keep
        if not others:
            return True
        for pid in others:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.005)
    return False


def empty(top: str) -> None:
    for entry in os.scandir(top):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


def main() -> None:
    then = sys.argv[1:]
    if then and (then[: len(THEN)] != THEN or then[len(THEN) : len(THEN) + 1] not in STEPS):
        sys.exit("judge-reset: --then takes only the judge's prepare or compare")
    keep = spared()
    if not kill_others(keep):
        sys.exit("judge-reset: processes keep appearing")
    for top in WRITABLE:
        if os.path.isdir(top):
            try:
                empty(top)
            except OSError as exc:
                sys.exit(f"judge-reset: cannot empty {top}: {exc.strerror}")
    left = set(processes()) - keep
    dirty = [top for top in WRITABLE if os.path.isdir(top) and os.listdir(top)]
    if left or dirty:
        sys.exit("judge-reset: not clean")
    print("clean", flush=True)
    if then:
        # The step runs in this very process (the one the reset spared), as `python3 -I
        # /assay/judge.py ...` would, without a second interpreter start.
        sys.argv = then[3:]
        runpy.run_path(then[3], run_name="__main__")


if __name__ == "__main__":
    main()

"""The OCI runtime-spec `config.json` of one container, from its `ContainerSpec`: pure.

Every protection Docker 20.10 gives a grading container is written out here, one field each,
so that the runc backend keeps them without an engine in between: the same default mounts,
masked and read-only /proc and /sys paths, device allow-list, seccomp profile (Docker's
default, converted by `seccomp.py`), no capabilities and no-new-privileges for a hardened
container, a new network namespace with loopback only, memory with swap equal to it, pids,
CPU quota, and a core-dump limit of zero. `tests/unit/test_oci_bundle.py` pins each one and
`tests/docker/test_oci_runtime.py` inspects a real container for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..base import ContainerSpec

INIT_PATH = "/dev/init"
"""Where the host's static tini is bound in a container that has an init (Docker's path)."""

MASKED_PATHS = (
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
)
READONLY_PATHS = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")

DOCKER_DEFAULT_CAPS = (
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
)
"""What an unhardened container (the T0/T1 baselines, modelling ordinary harnesses) holds:
Docker's default set."""
SWITCH_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")
NOFILE = 65536
CPU_PERIOD_US = 100_000
SHM_BYTES = 64 * 2**20


@dataclass(frozen=True)
class HostPaths:
    """The host side of a container: what the backend prepared before writing its config."""

    rootfs: str
    """The merged root (an overlay over the image's shared, read-only unpacked root)."""
    tmp: str
    """A size-capped tmpfs on the host, bound at /tmp."""
    scratch: Mapping[str, str]
    """Container target -> host tmpfs, for the spec's scratch and those of `mounts_of`."""
    extra_binds: Sequence[tuple[str, str, bool]] = ()
    """(host source, container target, read_only) of `mounts_of`'s binds."""
    init: str | None = None
    """The host's static init binary, bound at INIT_PATH when the spec has an init."""


def user_ids(user: str) -> tuple[int, int]:
    """ "uid:gid" (or "uid") as numbers; names are refused (nothing resolves them here)."""
    uid, _, gid = user.partition(":")
    if not uid.isdigit() or (gid and not gid.isdigit()):
        raise ValueError(f"user {user!r} is not numeric uid:gid")
    return int(uid), int(gid or uid)


def caps_block(caps: Sequence[str]) -> dict[str, list[str]]:
    return {k: list(caps) for k in ("bounding", "effective", "permitted")} | {
        "inheritable": [],
        "ambient": [],
    }


def process(
    argv: Sequence[str],
    *,
    user: str,
    env: Mapping[str, str],
    cwd: str,
    caps: Sequence[str],
    no_new_privileges: bool,
    nofile: int = NOFILE,
    nproc: int | None = None,
) -> dict[str, Any]:
    """A process object (the container's main one, or an exec's `--process` file). `nofile`
    may not exceed the controller's own hard limit: runc cannot raise it (Docker's containers
    inherit dockerd's). `nproc`, if given, is its RLIMIT_NPROC."""
    uid, gid = user_ids(user)
    rlimits = [
        {"type": "RLIMIT_CORE", "hard": 0, "soft": 0},
        {"type": "RLIMIT_NOFILE", "hard": nofile, "soft": nofile},
    ]
    if nproc is not None:
        rlimits.append({"type": "RLIMIT_NPROC", "hard": nproc, "soft": nproc})
    return {
        "terminal": False,
        "user": {"uid": uid, "gid": gid, "additionalGids": [gid]},
        "args": list(argv),
        "env": [f"{k}={v}" for k, v in env.items()],
        "cwd": cwd,
        "capabilities": caps_block(caps),
        "rlimits": rlimits,
        "noNewPrivileges": no_new_privileges,
    }


def exec_caps(spec: ContainerSpec) -> tuple[str, ...]:
    if not spec.hardened:
        return DOCKER_DEFAULT_CAPS
    return SWITCH_CAPS if spec.switch_user else ()


def exec_user(spec: ContainerSpec) -> str:
    return "0:0" if spec.switch_user else spec.user


def _mounts(spec: ContainerSpec, host: HostPaths) -> list[dict[str, Any]]:
    nosuid_dev_exec = ["nosuid", "noexec", "nodev"]
    mounts: list[dict[str, Any]] = [
        {"destination": "/proc", "type": "proc", "source": "proc", "options": nosuid_dev_exec},
        {
            "destination": "/dev",
            "type": "tmpfs",
            "source": "tmpfs",
            "options": ["nosuid", "strictatime", "mode=755", "size=65536k"],
        },
        {
            "destination": "/dev/pts",
            "type": "devpts",
            "source": "devpts",
            "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"],
        },
        {
            "destination": "/sys",
            "type": "sysfs",
            "source": "sysfs",
            "options": [*nosuid_dev_exec, "ro"],
        },
        {
            "destination": "/sys/fs/cgroup",
            "type": "cgroup",
            "source": "cgroup",
            "options": ["ro", *nosuid_dev_exec, "relatime"],
        },
        {
            "destination": "/dev/mqueue",
            "type": "mqueue",
            "source": "mqueue",
            "options": nosuid_dev_exec,
        },
        {
            "destination": "/dev/shm",
            "type": "tmpfs",
            "source": "shm",
            "options": [*nosuid_dev_exec, "mode=1777", f"size={SHM_BYTES}"],
        },
        {
            "destination": "/tmp",
            "type": "bind",
            "source": host.tmp,
            "options": ["rbind", "nosuid", "nodev"],
        },
    ]
    if host.init is not None:
        mounts.append(
            {
                "destination": INIT_PATH,
                "type": "bind",
                "source": host.init,
                "options": ["bind", "ro"],
            }
        )
    binds = [(str(b.source), b.target, b.read_only) for b in spec.binds]
    for source, target, read_only in [*host.extra_binds, *binds]:
        mounts.append(
            {
                "destination": target,
                "type": "bind",
                "source": source,
                "options": ["rbind", "ro" if read_only else "rw", "nosuid", "nodev"],
            }
        )
    for target, source in host.scratch.items():
        mounts.append(
            {
                "destination": target,
                "type": "bind",
                "source": source,
                "options": ["rbind", "rw", "nosuid", "nodev"],
            }
        )
    return mounts


def config(
    spec: ContainerSpec,
    host: HostPaths,
    *,
    image_env: Mapping[str, str],
    image_workdir: str,
    seccomp: Mapping[str, Any],
    cgroups_path: str,
    hostname: str,
    nofile: int = NOFILE,
    cgroup_pids: int | None = None,
    nproc: int | None = None,
) -> dict[str, Any]:
    """The config.json of `spec`'s container. `seccomp` is the `linux.seccomp` object for the
    capabilities its processes may hold (Docker's default profile, converted). The cgroup's
    pids limit is the spec's unless `cgroup_pids` says otherwise, and `nproc` is the main
    process's RLIMIT_NPROC (a runtime whose host cgroup counts its own threads limits the
    container's tasks that way: `client.Flavour.pids_backstop`)."""
    if spec.switch_user and not spec.hardened:
        raise ValueError("switch_user is only for a hardened container")
    if spec.stdin and not spec.spawned:
        raise ValueError("stdin is only for a spawned container")
    env = {**image_env, **spec.env}
    cwd = spec.workdir or image_workdir or "/"
    argv: list[str] = list(spec.command)
    if spec.init:
        if host.init is None:
            raise ValueError("a container with an init needs the host's init binary")
        argv = [INIT_PATH, "--", *argv]
    main_caps: tuple[str, ...]
    if spec.switch_user:
        # The runner is the main process (or an exec): it starts as root with the three
        # capabilities it spends on a uid of its own. Init holds them too, as under Docker's
        # cap_add: root's, which the candidate's uid cannot signal, trace or open.
        main_user, main_caps = "0:0", SWITCH_CAPS
    elif spec.hardened:
        # As with Docker: init and its keep-alive run as root with no capabilities, so the
        # candidate's uid cannot reach their fds through /proc or signal them; a container
        # whose command is its PID 1, or the work itself, runs it as the spec's user.
        main_user = "0:0" if spec.init and not spec.spawned else spec.user
        main_caps = ()
    else:
        main_user, main_caps = spec.user, DOCKER_DEFAULT_CAPS
    lim = spec.limits
    namespaces = [{"type": t} for t in ("pid", "ipc", "uts", "mount")]
    if spec.hardened or spec.network == "none":
        namespaces.append({"type": "network"})  # runc brings up loopback, and nothing else
    resources: dict[str, Any] = {
        "devices": [{"allow": False, "access": "rwm"}],
        "memory": {"limit": lim.memory_bytes, "swap": lim.memory_bytes},
        "pids": {"limit": lim.pids if cgroup_pids is None else cgroup_pids},
        "cpu": {"quota": int(lim.cpus * CPU_PERIOD_US), "period": CPU_PERIOD_US},
    }
    linux: dict[str, Any] = {
        "namespaces": namespaces,
        "cgroupsPath": cgroups_path,
        "resources": resources,
        "maskedPaths": list(MASKED_PATHS),
        "readonlyPaths": list(READONLY_PATHS),
        "seccomp": dict(seccomp),
    }
    return {
        "ociVersion": "1.0.2",
        "process": process(
            argv,
            user=main_user,
            env=env,
            cwd=cwd,
            caps=main_caps,
            no_new_privileges=spec.hardened,
            nofile=nofile,
            nproc=nproc,
        ),
        "root": {"path": host.rootfs, "readonly": spec.hardened},
        "hostname": hostname,
        "mounts": _mounts(spec, host),
        "linux": linux,
    }


def image_env(env_list: Sequence[str] | None) -> dict[str, str]:
    """An image config's `Env` ("K=V" strings) as a mapping; a PATH if it sets none."""
    env: dict[str, str] = {}
    for item in env_list or ():
        key, sep, value = item.partition("=")
        if sep and key:
            env[key] = value
    env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    return env

"""Docker's default seccomp profile, as moby ships it today, and as the OCI runtime-spec
`linux.seccomp` object runc reads.

The runc backend runs containers without dockerd, so nothing converts Docker's profile for it:
this module does what moby's `setupSeccomp` does (`seccomp_linux.go`), so a grading container
is filtered exactly as current Docker would filter it, never more loosely. The Docker backend
hands the same profile to the engine (`profile_text`), so an older engine (Debian 12's Docker
20.10) applies it instead of its own, older default.

`docker_default_seccomp.json`, next to this module, is moby's `seccomp/default.json` byte for
byte as of github.com/moby/profiles tag seccomp/v0.2.3 (commit
836ae4d37ef2ec995c77c99fc55f5b5f3af3a897, 2026-05-06; git blob
ea5a494afb8d64898fa0f4f47ae0c4f5ba9cbbc9), the module Docker Engine v29.7.2 vendors (moby tag
docker-v29.7.2, commit 6a43e3d5afddf4111da0f864bbc7cae5d7e95001). Against Docker 20.10's
(v20.10.27, blob bf58ad33de336411e28d50d3d3a7776ab0ade07a) it refuses io_uring_setup, _enter
and _register (moby #46762, Docker 25) and socket(2) for AF_ALG (38) and AF_VSOCK (40);
allows newer syscalls (pkey_*, cachestat, fchmodat2, map_shadow_stack,
futex_wait/_wake/_requeue, statmount, listmount, mseal, uretprobe, the *xattrat family); gates
bpf by CAP_BPF and perf_event_open by CAP_PERFMON as well as CAP_SYS_ADMIN, lsm_* by
CAP_SYS_ADMIN, set_mempolicy_home_node by CAP_SYS_NICE; allows process_vm_readv/writev from
kernel 4.8 as it does ptrace (the kernel's ptrace access check guards all three); and sets
`defaultErrnoRet` to EPERM, which runc returned anyway.
clone and clone3 are unchanged (clone without namespace flags, clone3 ENOSYS, unless
CAP_SYS_ADMIN). The conversion follows the same tag's `setupSeccomp`, which differs from
20.10's only in carrying every top-level runtime-spec field (`defaultErrnoRet`, `flags`,
`listenerPath`, `listenerMetadata`) and in knowing riscv64 and loong64.

Where moby's Go code is lenient the conversion is stricter, never looser: unknown keys are
refused (Go's JSON decoder drops them, so a misspelled "include" would turn a capability-gated
allow into an unconditional one), and so are a profile without a default action (moby reads
that as "no seccomp at all"), an entry naming no syscall, an unknown architecture and a
capability not spelled "CAP_...".
"""

from __future__ import annotations

import json
import platform
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from assay.errors import EngineError

__all__ = [
    "KernelVersion",
    "docker_default",
    "oci_seccomp",
    "parse_kernel_release",
    "profile_text",
    "running_kernel",
]

KernelVersion = tuple[int, int]
"""(kernel, major revision): the "4" and "8" of "4.8.17-generic", all `minKernel` looks at."""

PROFILE_RESOURCE = "docker_default_seccomp.json"

# Host machine name (`platform.machine()`, `uname -m`) -> moby's libseccomp native arch name,
# which is what a profile's includes/excludes "arches" hold, and the SCMP_ARCH_* it maps to
# (moby's goToNative and nativeToSeccomp tables, keyed by what Python reports instead of GOARCH).
_ARCHES: dict[str, tuple[str, str]] = {
    "x86_64": ("amd64", "SCMP_ARCH_X86_64"),
    "i386": ("x86", "SCMP_ARCH_X86"),
    "i686": ("x86", "SCMP_ARCH_X86"),
    "aarch64": ("arm64", "SCMP_ARCH_AARCH64"),
    "armv7l": ("arm", "SCMP_ARCH_ARM"),
    "ppc64le": ("ppc64le", "SCMP_ARCH_PPC64LE"),
    "s390x": ("s390x", "SCMP_ARCH_S390X"),
    "riscv64": ("riscv64", "SCMP_ARCH_RISCV64"),
}

_TOP_KEYS = frozenset(
    {
        "defaultAction",
        "defaultErrnoRet",
        "architectures",
        "archMap",
        "syscalls",
        "flags",
        "listenerPath",
        "listenerMetadata",
    }
)
# Top-level runtime-spec fields newer moby copies to the output unchanged, in this order.
_CARRIED_KEYS = ("defaultErrnoRet", "flags", "listenerPath", "listenerMetadata")
_SYSCALL_KEYS = frozenset(
    {"name", "names", "action", "errnoRet", "args", "comment", "includes", "excludes"}
)
_FILTER_KEYS = frozenset({"caps", "arches", "minKernel"})
_ARG_KEYS = frozenset({"index", "value", "valueTwo", "op"})
_ARCH_MAP_KEYS = frozenset({"architecture", "subArchitectures"})

_RELEASE = re.compile(r"(\d+)\.(\d+)")


def _refuse_unknown(where: str, value: Any, known: frozenset[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"seccomp profile: {where} is not an object: {value!r}")
    unknown = sorted(set(value) - known)
    if unknown:
        raise ValueError(f"seccomp profile: unknown key(s) in {where}: {', '.join(unknown)}")
    return value


def _strings(where: str, value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValueError(f"seccomp profile: {where} is not a list: {value!r}")
    if not all(isinstance(v, str) for v in value):
        raise ValueError(f"seccomp profile: {where} holds a non-string: {value!r}")
    return list(value)


def _min_kernel(where: str, value: Any) -> KernelVersion | None:
    """moby's KernelVersion.UnmarshalJSON: exactly "<kernel>.<major>", each at most 255, not
    "0.0"; "" decodes to a present 0.0, which every kernel satisfies (as in Go)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"seccomp profile: {where} is not a string: {value!r}")
    if value == "":
        return (0, 0)
    parts = value.split(".")
    if len(parts) != 2 or not all(p.isdigit() and p.isascii() for p in parts):
        raise ValueError(f'seccomp profile: {where} is {value!r}, expected "<kernel>.<major>"')
    kernel, major = int(parts[0]), int(parts[1])
    if kernel > 255 or major > 255 or (kernel, major) == (0, 0):
        raise ValueError(f'seccomp profile: {where} is {value!r}, expected "<kernel>.<major>"')
    return (kernel, major)


def _filter(where: str, value: Any) -> tuple[list[str], list[str], KernelVersion | None]:
    body = _refuse_unknown(where, {} if value is None else value, _FILTER_KEYS)
    return (
        _strings(f"{where}.caps", body.get("caps")),
        _strings(f"{where}.arches", body.get("arches")),
        _min_kernel(f"{where}.minKernel", body.get("minKernel")),
    )


def _arg(where: str, value: Any) -> dict[str, Any]:
    body = _refuse_unknown(where, value, _ARG_KEYS)
    for key in ("index", "value", "op"):
        if key not in body:
            raise ValueError(f"seccomp profile: {where} has no {key!r}")
    out: dict[str, Any] = {"index": body["index"], "value": body["value"]}
    # runtime-spec marshals valueTwo with omitempty: 0 and absent are the same filter.
    if body.get("valueTwo"):
        out["valueTwo"] = body["valueTwo"]
    out["op"] = body["op"]
    return out


def _kept(
    where: str, entry: Mapping[str, Any], arch: str, caps: frozenset[str], kernel: KernelVersion
) -> bool:
    """setupSeccomp's filter, in its order: any exclude that matches drops the entry, and then
    every include must match (all of an include's caps, not any one of them)."""
    ex_caps, ex_arches, ex_kernel = _filter(f"{where}.excludes", entry.get("excludes"))
    in_caps, in_arches, in_kernel = _filter(f"{where}.includes", entry.get("includes"))
    if arch in ex_arches:
        return False
    if any(c in caps for c in ex_caps):
        return False
    if ex_kernel is not None and kernel >= ex_kernel:
        return False
    if in_arches and arch not in in_arches:
        return False
    if not all(c in caps for c in in_caps):
        return False
    return not (in_kernel is not None and kernel < in_kernel)


def oci_seccomp(
    profile: Mapping[str, Any],
    caps: frozenset[str],
    arch: str = "x86_64",
    *,
    kernel: KernelVersion,
) -> dict[str, Any]:
    """The `linux.seccomp` object moby's setupSeccomp makes of the Docker-format `profile` for a
    process whose capability bounding set is `caps` ("CAP_SYS_ADMIN", ...), on a host of machine
    `arch` (`platform.machine()`'s name) running `kernel`. Pure: the caller supplies the host
    facts. Raises ValueError for a profile (or arch, or capability) it cannot convert faithfully.
    """
    if arch not in _ARCHES:
        known = ", ".join(sorted(_ARCHES))
        raise ValueError(f"seccomp: unknown architecture {arch!r} (known: {known})")
    bad_caps = sorted(c for c in caps if not c.startswith("CAP_"))
    if bad_caps:
        # "SYS_ADMIN" would silently match no include and no exclude.
        raise ValueError(f"seccomp: capabilities must be named CAP_*: {', '.join(bad_caps)}")
    native, scmp_arch = _ARCHES[arch]
    top = _refuse_unknown("the profile", profile, _TOP_KEYS)
    action = top.get("defaultAction")
    if not isinstance(action, str) or not action:
        # moby turns a profile with neither a default action nor syscalls into no seccomp at
        # all; a grading container must never run unfiltered, so that is an error here.
        raise ValueError("seccomp profile: no defaultAction")

    architectures = _strings("architectures", top.get("architectures"))
    arch_map = top.get("archMap") or []
    if architectures and arch_map:
        raise ValueError(
            "seccomp profile: both 'architectures' and 'archMap' are specified, use one"
        )
    for i, item in enumerate(arch_map):
        body = _refuse_unknown(f"archMap[{i}]", item, _ARCH_MAP_KEYS)
        if body.get("architecture") == scmp_arch:
            architectures.append(scmp_arch)
            architectures += _strings(
                f"archMap[{i}].subArchitectures", body.get("subArchitectures")
            )
            break

    out: dict[str, Any] = {"defaultAction": action}
    for key in _CARRIED_KEYS:
        if top.get(key) is not None:
            out[key] = json.loads(json.dumps(top[key]))  # a copy: the result shares nothing
    if architectures:
        out["architectures"] = architectures

    syscalls: list[dict[str, Any]] = []
    for i, raw in enumerate(top.get("syscalls") or []):
        where = f"syscalls[{i}]"
        entry = _refuse_unknown(where, raw, _SYSCALL_KEYS)
        names = _strings(f"{where}.names", entry.get("names"))
        name = entry.get("name")
        if name:
            if names:
                raise ValueError(f"seccomp profile: {where} has both 'name' and 'names'")
            names = [name]
        if not names:
            raise ValueError(f"seccomp profile: {where} names no syscall")
        if not isinstance(entry.get("action"), str) or not entry["action"]:
            raise ValueError(f"seccomp profile: {where} has no action")
        # Validate both filters before deciding, so a bad entry fails on every host alike.
        if not _kept(where, entry, native, caps, kernel):
            continue
        call: dict[str, Any] = {"names": names, "action": entry["action"]}
        args = [_arg(f"{where}.args[{j}]", a) for j, a in enumerate(entry.get("args") or [])]
        if args:
            call["args"] = args
        # A pointer in Go: present (even as 0) means set.
        if entry.get("errnoRet") is not None:
            call["errnoRet"] = entry["errnoRet"]
        syscalls.append(call)
    if syscalls:
        out["syscalls"] = syscalls
    return out


def parse_kernel_release(release: str) -> KernelVersion:
    """(kernel, major) of a `uname -r` string, as moby's parseRelease: "3.12.25-gentoo" and
    "3.12-1-amd64" are both (3, 12)."""
    match = _RELEASE.match(release)
    if match is None:
        raise ValueError(f"cannot parse kernel release {release!r}")
    return (int(match.group(1)), int(match.group(2)))


def running_kernel() -> KernelVersion:
    """The host kernel's (kernel, major): what `minKernel` is compared with."""
    release = platform.release()
    try:
        return parse_kernel_release(release)
    except ValueError:
        raise EngineError(
            f"cannot read the host kernel's version from {release!r}, which the seccomp "
            "profile's minKernel rules need"
        ) from None


def _profile() -> dict[str, Any]:
    text = resources.files(__package__ or __name__).joinpath(PROFILE_RESOURCE).read_text()
    profile: dict[str, Any] = json.loads(text)
    return profile


def docker_default(caps: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Docker's current default profile for this host, for a process holding `caps`."""
    machine = platform.machine()
    if machine != "x86_64":
        raise EngineError(
            f"the runc backend supports only x86_64 hosts, not {machine!r}: Docker's default "
            "seccomp profile is converted and tested for x86_64 only"
        )
    return oci_seccomp(_profile(), caps, machine, kernel=running_kernel())


def profile_text() -> str:
    """The packaged profile in Docker's own format, for `--security-opt seccomp=<json>`: the
    engine converts it for the container's capabilities, architecture and kernel itself."""
    return json.dumps(_profile(), separators=(",", ":"))

"""Docker's default seccomp profile converted for runc (`runtime/oci/seccomp.py`), off the
engine: the packaged profile is moby's current one, its capability-gated syscalls appear only
with their capability, what current Docker refuses (io_uring, AF_ALG and AF_VSOCK sockets) is
refused, and the conversion's filters behave as moby's setupSeccomp. That real runc accepts
the result and enforces it is tests/docker/test_oci_seccomp_runc.py's job."""

from __future__ import annotations

import hashlib
import json
import platform
from importlib import resources
from typing import Any

import pytest

from assay._internal.runtime.oci import seccomp
from assay.errors import EngineError

# The kernel of a current host, and one older than every minKernel in the default profile.
NEW = (6, 1)
OLD = (4, 4)


def _profile() -> dict[str, Any]:
    text = resources.files(seccomp.__package__ or "").joinpath(seccomp.PROFILE_RESOURCE)
    return json.loads(text.read_text())


def _convert(caps: frozenset[str] = frozenset(), kernel: tuple[int, int] = NEW) -> dict[str, Any]:
    return seccomp.oci_seccomp(_profile(), caps, "x86_64", kernel=kernel)


def _allowed(conf: dict[str, Any]) -> set[str]:
    """Syscalls some ALLOW rule names (with or without argument conditions)."""
    return {
        n for rule in conf["syscalls"] if rule["action"] == "SCMP_ACT_ALLOW" for n in rule["names"]
    }


def _rules_for(conf: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [rule for rule in conf["syscalls"] if name in rule["names"]]


def test_the_packaged_profile_is_moby_profiles_seccomp_v0_2_3_default_json_byte_for_byte() -> None:
    """The git blob id of seccomp/default.json at github.com/moby/profiles tag seccomp/v0.2.3,
    the file moby's tag docker-v29.7.2 vendors (not v20.10.27's bf58ad33...)."""
    data = (
        resources.files(seccomp.__package__ or "").joinpath(seccomp.PROFILE_RESOURCE).read_bytes()
    )
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    assert blob == "ea5a494afb8d64898fa0f4f47ae0c4f5ba9cbbc9"


def test_the_default_action_refuses_with_eperm_and_x86_64_covers_its_sub_abis() -> None:
    conf = _convert()
    assert conf["defaultAction"] == "SCMP_ACT_ERRNO"
    assert conf["defaultErrnoRet"] == 1  # EPERM, carried to runc as moby carries it
    assert conf["architectures"] == ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"]


def _every_cap() -> frozenset[str]:
    return frozenset(
        c for rule in _profile()["syscalls"] for c in (rule.get("includes") or {}).get("caps", [])
    )


@pytest.mark.parametrize("syscall", ["io_uring_setup", "io_uring_enter", "io_uring_register"])
def test_io_uring_is_in_no_rule_with_any_capability_on_any_kernel(syscall: str) -> None:
    """moby #46762 (Docker 25): io_uring left the allow list, so the default action (EPERM)
    refuses it; 20.10's profile allowed all three unconditionally."""
    for caps in (frozenset(), _every_cap()):
        for kernel in (OLD, NEW, (255, 255)):
            assert all(syscall not in rule["names"] for rule in _convert(caps, kernel)["syscalls"])


def test_socket_is_allowed_for_every_family_but_af_alg_and_af_vsock() -> None:
    """socket(2) is allowed only through three argument rules on the family (arg 0), which
    runc ORs: below 38, exactly 39, above 40. So AF_ALG (38, the kernel crypto API) and
    AF_VSOCK (40) match none and get the default EPERM; AF_UNIX (1), AF_INET (2), AF_INET6
    (10), AF_NETLINK (16) and AF_PACKET (17) match the first."""
    for caps in (frozenset(), _every_cap()):
        rules = _rules_for(_convert(caps), "socket")
        assert all(r["names"] == ["socket"] and r["action"] == "SCMP_ACT_ALLOW" for r in rules)
        conds = [(r["args"][0]["op"], r["args"][0]["value"]) for r in rules]
        assert all(len(r["args"]) == 1 and r["args"][0]["index"] == 0 for r in rules)

        def allowed(family: int) -> bool:
            ops = {"SCMP_CMP_LT": family.__lt__, "SCMP_CMP_EQ": family.__eq__}
            ops["SCMP_CMP_GT"] = family.__gt__
            return any(ops[op](value) for op, value in conds)

        assert [f for f in range(0, 64) if not allowed(f)] == [38, 40]


@pytest.mark.parametrize(
    "syscall",
    ["cachestat", "fchmodat2", "map_shadow_stack", "futex_wait", "futex_wake", "futex_requeue",
     "futex_waitv", "mseal", "statmount", "listmount", "landlock_create_ruleset", "memfd_secret",
     "process_mrelease", "pkey_alloc", "getxattrat", "uretprobe", "rseq", "close_range"],
)  # fmt: skip
def test_syscalls_current_docker_allows_unconditionally(syscall: str) -> None:
    (rule,) = _rules_for(_convert(kernel=OLD), syscall)
    assert rule["action"] == "SCMP_ACT_ALLOW" and "args" not in rule


def test_the_conversion_keeps_every_moby_rule_a_process_without_caps_gets() -> None:
    """Against moby's filter written out independently, on kernel 6.1 (at or above every
    minKernel in the profile): every unconditional entry, every amd64 one, every one gated by a
    minimum kernel, every exclude-caps one, in the profile's order, and nothing gated by a
    capability or another arch."""
    kept = []
    for rule in _profile()["syscalls"]:
        inc, exc = rule.get("includes") or {}, rule.get("excludes") or {}
        if inc.get("caps") or (inc.get("arches") and "amd64" not in inc["arches"]):
            continue
        if "amd64" in exc.get("arches", []):
            continue
        kept.append(rule["names"])
    assert [r["names"] for r in _convert()["syscalls"]] == kept


@pytest.mark.parametrize(
    ("syscall", "cap"),
    [
        ("mount", "CAP_SYS_ADMIN"),
        ("umount2", "CAP_SYS_ADMIN"),
        ("unshare", "CAP_SYS_ADMIN"),
        ("setns", "CAP_SYS_ADMIN"),
        ("bpf", "CAP_SYS_ADMIN"),
        ("bpf", "CAP_BPF"),
        ("perf_event_open", "CAP_SYS_ADMIN"),
        ("perf_event_open", "CAP_PERFMON"),
        ("lsm_set_self_attr", "CAP_SYS_ADMIN"),
        ("set_mempolicy_home_node", "CAP_SYS_NICE"),
        ("open_by_handle_at", "CAP_DAC_READ_SEARCH"),
        ("init_module", "CAP_SYS_MODULE"),
        ("reboot", "CAP_SYS_BOOT"),
        ("chroot", "CAP_SYS_CHROOT"),
        ("kcmp", "CAP_SYS_PTRACE"),
        ("iopl", "CAP_SYS_RAWIO"),
        ("clock_settime", "CAP_SYS_TIME"),
    ],
)
def test_a_capability_gated_syscall_is_allowed_only_with_its_capability(
    syscall: str, cap: str
) -> None:
    assert syscall not in _allowed(_convert())
    assert syscall not in _allowed(_convert(frozenset({"CAP_KILL", "CAP_CHOWN"})))
    assert syscall in _allowed(_convert(frozenset({cap})))


@pytest.mark.parametrize(
    "syscall",
    [
        "kexec_load",
        "kexec_file_load",
        "keyctl",
        "add_key",
        "request_key",
        "userfaultfd",
        "pivot_root",
        "swapon",
        "create_module",
        "nfsservctl",
    ],
)
def test_syscalls_docker_never_allows_are_in_no_rule(syscall: str) -> None:
    for caps in (frozenset(), _every_cap()):
        assert all(syscall not in rule["names"] for rule in _convert(caps)["syscalls"])


def test_clone_without_cap_sys_admin_is_allowed_only_without_namespace_flags() -> None:
    rules = _rules_for(_convert(), "clone")
    # CLONE_NEWNS|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWCGROUP must all be clear in flags (arg 0
    # on x86_64; the s390 variant, arg 1, is not for this arch).
    assert rules == [
        {
            "names": ["clone"],
            "action": "SCMP_ACT_ALLOW",
            "args": [{"index": 0, "value": 2114060288, "op": "SCMP_CMP_MASKED_EQ"}],
        }
    ]
    with_admin = _rules_for(_convert(frozenset({"CAP_SYS_ADMIN"})), "clone")
    assert len(with_admin) == 1 and "args" not in with_admin[0]


def test_clone3_is_refused_with_enosys_without_cap_sys_admin() -> None:
    """ENOSYS, not EPERM, so glibc falls back to clone, whose flags the filter can inspect."""
    assert _rules_for(_convert(), "clone3") == [
        {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38}
    ]
    (rule,) = _rules_for(_convert(frozenset({"CAP_SYS_ADMIN"})), "clone3")
    assert rule["action"] == "SCMP_ACT_ALLOW"


@pytest.mark.parametrize("syscall", ["ptrace", "process_vm_readv", "process_vm_writev"])
def test_ptrace_and_process_vm_are_allowed_from_kernel_4_8_or_with_cap_sys_ptrace(
    syscall: str,
) -> None:
    """20.10 allowed process_vm_* only with CAP_SYS_PTRACE; current moby lets them follow
    ptrace, which the kernel's ptrace access check guards the same way."""
    assert syscall in _allowed(_convert(kernel=(4, 8)))
    assert syscall not in _allowed(_convert(kernel=(4, 7)))
    assert syscall in _allowed(_convert(frozenset({"CAP_SYS_PTRACE"}), kernel=OLD))


def test_only_x86_64_arch_rules_are_kept() -> None:
    allowed = _allowed(_convert())
    assert {"arch_prctl", "modify_ldt"} <= allowed
    assert not {"set_tls", "s390_runtime_instr", "breakpoint"} & allowed
    arm = seccomp.oci_seccomp(_profile(), frozenset(), "aarch64", kernel=NEW)
    assert arm["architectures"] == ["SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"]
    assert "set_tls" in _allowed(arm) and "arch_prctl" not in _allowed(arm)


def test_every_rule_is_in_oci_form() -> None:
    for caps in (frozenset(), frozenset({"CAP_SYS_ADMIN", "CAP_SYS_PTRACE"})):
        for rule in _convert(caps)["syscalls"]:
            assert set(rule) <= {"names", "action", "args", "errnoRet"}, rule
            assert rule["names"] and all(isinstance(n, str) for n in rule["names"])
            assert rule.get("args", [None]) != []
            for arg in rule.get("args", []):
                assert set(arg) <= {"index", "value", "valueTwo", "op"}


def test_the_conversion_leaves_its_input_alone_and_shares_nothing_with_it() -> None:
    profile = _profile()
    before = json.dumps(profile, sort_keys=True)
    out = seccomp.oci_seccomp(profile, frozenset(), kernel=NEW)
    out["syscalls"][0]["names"].append("kexec_load")
    out["architectures"].append("SCMP_ARCH_ARM")
    assert json.dumps(profile, sort_keys=True) == before


# A profile small enough to read whole: each rule exercises one of setupSeccomp's filters.
TINY: dict[str, Any] = {
    "defaultAction": "SCMP_ACT_KILL_PROCESS",
    "defaultErrnoRet": 1,
    "archMap": [
        {"architecture": "SCMP_ARCH_AARCH64", "subArchitectures": ["SCMP_ARCH_ARM"]},
        {"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86"]},
    ],
    "syscalls": [
        {
            "names": ["read"],
            "action": "SCMP_ACT_ALLOW",
            "args": [],
            "comment": "x",
            "includes": {},
            "excludes": {},
        },
        {"name": "write", "action": "SCMP_ACT_ALLOW"},
        {
            "names": ["both_caps"],
            "action": "SCMP_ACT_ALLOW",
            "includes": {"caps": ["CAP_A", "CAP_B"]},
        },
        {
            "names": ["not_with_a_or_b"],
            "action": "SCMP_ACT_ALLOW",
            "excludes": {"caps": ["CAP_A", "CAP_B"]},
        },
        {"names": ["amd64_only"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["amd64"]}},
        {"names": ["not_amd64"], "action": "SCMP_ACT_ALLOW", "excludes": {"arches": ["amd64"]}},
        {
            "names": ["x86_64_spelling"],
            "action": "SCMP_ACT_ALLOW",
            "includes": {"arches": ["x86_64"]},
        },
        {"names": ["from_5_10"], "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": "5.10"}},
        {
            "names": ["before_5_10"],
            "action": "SCMP_ACT_ERRNO",
            "errnoRet": 38,
            "excludes": {"minKernel": "5.10"},
        },
        {"names": ["zero_errno"], "action": "SCMP_ACT_ERRNO", "errnoRet": 0},
        {
            "names": ["personality"],
            "action": "SCMP_ACT_ALLOW",
            "args": [
                {"index": 0, "value": 8, "valueTwo": 0, "op": "SCMP_CMP_EQ"},
                {"index": 1, "value": 255, "valueTwo": 3, "op": "SCMP_CMP_MASKED_EQ"},
            ],
        },
    ],
}


def _tiny_names(caps: set[str], kernel: tuple[int, int], arch: str = "x86_64") -> list[str]:
    out = seccomp.oci_seccomp(TINY, frozenset(caps), arch, kernel=kernel)
    return [n for rule in out["syscalls"] for n in rule["names"]]


def test_tiny_profile_top_level() -> None:
    out = seccomp.oci_seccomp(TINY, frozenset(), kernel=NEW)
    assert [k for k in out] == ["defaultAction", "defaultErrnoRet", "architectures", "syscalls"]
    assert out["defaultAction"] == "SCMP_ACT_KILL_PROCESS"
    assert out["defaultErrnoRet"] == 1
    # Only the entry of the host's own architecture, which need not be the first.
    assert out["architectures"] == ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86"]


def test_tiny_profile_includes_need_every_cap_and_excludes_any() -> None:
    base = ["read", "write", "amd64_only", "from_5_10", "zero_errno", "personality"]
    assert _tiny_names(set(), NEW) == [*base[:2], "not_with_a_or_b", *base[2:]]
    assert _tiny_names({"CAP_A"}, NEW) == base
    assert _tiny_names({"CAP_A", "CAP_B"}, NEW) == [*base[:2], "both_caps", *base[2:]]


def test_tiny_profile_arches_use_moby_native_names() -> None:
    assert "amd64_only" in _tiny_names(set(), NEW)
    assert "not_amd64" not in _tiny_names(set(), NEW)
    # "x86_64" is not a name moby's profiles use for the arch: it never matches.
    assert "x86_64_spelling" not in _tiny_names(set(), NEW)
    arm = _tiny_names(set(), NEW, "aarch64")
    assert "not_amd64" in arm and "amd64_only" not in arm


@pytest.mark.parametrize(
    ("kernel", "from_5_10", "before_5_10"),
    [((5, 10), True, False), ((5, 9), False, True), ((6, 0), True, False), ((4, 19), False, True)],
)
def test_tiny_profile_min_kernel(
    kernel: tuple[int, int], from_5_10: bool, before_5_10: bool
) -> None:
    names = _tiny_names(set(), kernel)
    assert ("from_5_10" in names) is from_5_10
    assert ("before_5_10" in names) is before_5_10


def test_tiny_profile_rules_in_oci_form() -> None:
    rules = {
        r["names"][0]: r for r in seccomp.oci_seccomp(TINY, frozenset(), kernel=(5, 4))["syscalls"]
    }
    assert rules["read"] == {"names": ["read"], "action": "SCMP_ACT_ALLOW"}
    assert rules["write"] == {"names": ["write"], "action": "SCMP_ACT_ALLOW"}
    assert rules["before_5_10"] == {
        "names": ["before_5_10"],
        "action": "SCMP_ACT_ERRNO",
        "errnoRet": 38,
    }
    assert rules["zero_errno"] == {
        "names": ["zero_errno"],
        "action": "SCMP_ACT_ERRNO",
        "errnoRet": 0,
    }
    assert rules["personality"]["args"] == [
        {"index": 0, "value": 8, "op": "SCMP_CMP_EQ"},
        {"index": 1, "value": 255, "valueTwo": 3, "op": "SCMP_CMP_MASKED_EQ"},
    ]


def test_plain_architectures_are_kept_as_given() -> None:
    profile = {
        "defaultAction": "SCMP_ACT_ERRNO",
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW"}],
    }
    out = seccomp.oci_seccomp(profile, frozenset(), kernel=NEW)
    assert out["architectures"] == ["SCMP_ARCH_X86_64"]


@pytest.mark.parametrize(
    ("profile", "message"),
    [
        ({"syscalls": []}, "no defaultAction"),
        ({"defaultAction": ""}, "no defaultAction"),
        (
            {
                "defaultAction": "SCMP_ACT_ERRNO",
                "architectures": ["SCMP_ARCH_X86_64"],
                "archMap": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": []}],
            },
            "both",
        ),
        ({"defaultAction": "SCMP_ACT_ERRNO", "syscals": []}, "unknown key"),
        (
            {
                "defaultAction": "SCMP_ACT_ERRNO",
                "syscalls": [
                    {
                        "names": ["mount"],
                        "action": "SCMP_ACT_ALLOW",
                        "include": {"caps": ["CAP_SYS_ADMIN"]},
                    }
                ],
            },
            "unknown key",
        ),
        (
            {
                "defaultAction": "SCMP_ACT_ERRNO",
                "syscalls": [
                    {
                        "names": ["mount"],
                        "action": "SCMP_ACT_ALLOW",
                        "includes": {"cap": ["CAP_SYS_ADMIN"]},
                    }
                ],
            },
            "unknown key",
        ),
        (
            {
                "defaultAction": "SCMP_ACT_ERRNO",
                "syscalls": [{"name": "a", "names": ["b"], "action": "SCMP_ACT_ALLOW"}],
            },
            "both 'name'",
        ),
        (
            {
                "defaultAction": "SCMP_ACT_ERRNO",
                "syscalls": [{"names": [], "action": "SCMP_ACT_ALLOW"}],
            },
            "names no syscall",
        ),
        ({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["read"]}]}, "no action"),
        (
            {
                "defaultAction": "SCMP_ACT_ERRNO",
                "syscalls": [
                    {
                        "names": ["read"],
                        "action": "SCMP_ACT_ALLOW",
                        "args": [{"index": 0, "value": 1}],
                    }
                ],
            },
            "no 'op'",
        ),
    ],
)
def test_profiles_it_cannot_convert_faithfully_are_refused(
    profile: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        seccomp.oci_seccomp(profile, frozenset(), kernel=NEW)


def test_a_filter_that_does_not_apply_on_this_host_is_still_checked() -> None:
    profile = {
        "defaultAction": "SCMP_ACT_ERRNO",
        "syscalls": [
            {
                "names": ["x"],
                "action": "SCMP_ACT_ALLOW",
                "excludes": {"arches": ["amd64"]},
                "includes": {"minKernel": "4"},
            }
        ],
    }
    with pytest.raises(ValueError, match="minKernel"):
        seccomp.oci_seccomp(profile, frozenset(), kernel=NEW)


# moby's TestMarshalUnmarshalFilter (profiles/seccomp/seccomp_test.go at v20.10.27).
@pytest.mark.parametrize(
    "bad", [3, 3.12, True, "0.0", "3", ".3", "3.", "true", '3.12.1"', "4.15abc", "256.1"]
)
def test_a_bad_min_kernel_is_refused(bad: object) -> None:
    profile = {
        "defaultAction": "SCMP_ACT_ERRNO",
        "syscalls": [{"names": ["x"], "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": bad}}],
    }
    with pytest.raises(ValueError, match="minKernel"):
        seccomp.oci_seccomp(profile, frozenset(), kernel=NEW)


@pytest.mark.parametrize(
    ("given", "kept_on_0_1"), [(None, True), ("", True), ("0.5", False), ("0.50", False)]
)
def test_a_good_min_kernel_is_read_as_moby_reads_it(given: object, kept_on_0_1: bool) -> None:
    """ "" decodes in Go to a present 0.0, which every kernel meets; null to no condition."""
    profile = {
        "defaultAction": "SCMP_ACT_ERRNO",
        "syscalls": [
            {"names": ["x"], "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": given}}
        ],
    }
    kept = seccomp.oci_seccomp(profile, frozenset(), kernel=(0, 1)).get("syscalls", [])
    assert bool(kept) is kept_on_0_1


def test_unknown_arch_and_unprefixed_caps_are_refused() -> None:
    with pytest.raises(ValueError, match="sparc64"):
        seccomp.oci_seccomp(TINY, frozenset(), "sparc64", kernel=NEW)
    with pytest.raises(ValueError, match="SYS_ADMIN"):
        seccomp.oci_seccomp(TINY, frozenset({"SYS_ADMIN"}), kernel=NEW)


# moby's TestParseRelease (profiles/seccomp/kernel_linux_test.go at v20.10.27).
@pytest.mark.parametrize(
    ("release", "version"),
    [
        ("3.8", (3, 8)),
        ("3.8.0", (3, 8)),
        ("3.8.0-19-generic", (3, 8)),
        ("3.4.54.longterm-1", (3, 4)),
        ("3.10.0-862.2.3.el7.x86_64", (3, 10)),
        ("3.12.8tag", (3, 12)),
        ("3.12-1-amd64", (3, 12)),
        ("3.12foobar", (3, 12)),
        ("99.999.999-19-generic", (99, 999)),
        ("6.18.44-fc-v1147", (6, 18)),
    ],
)
def test_parse_kernel_release(release: str, version: tuple[int, int]) -> None:
    assert seccomp.parse_kernel_release(release) == version


@pytest.mark.parametrize(
    "release", ["", "3", "3.", "3a", "3.a", "a", "a.a", "a.a.a-a", "-3", "-3.8", "3.-8"]
)
def test_parse_kernel_release_refuses(release: str) -> None:
    with pytest.raises(ValueError, match="kernel release"):
        seccomp.parse_kernel_release(release)


def test_running_kernel_reads_platform_release(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "release", lambda: "5.15.0-91-generic")
    assert seccomp.running_kernel() == (5, 15)
    monkeypatch.setattr(platform, "release", lambda: "weird")
    with pytest.raises(EngineError, match="weird"):
        seccomp.running_kernel()


def test_docker_default_uses_the_packaged_profile_and_this_hosts_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(platform, "release", lambda: "4.4.0-1-amd64")
    old = seccomp.docker_default()
    assert old == _convert(kernel=(4, 4))
    assert "ptrace" not in _allowed(old)
    monkeypatch.setattr(platform, "release", lambda: "6.1.0-13-amd64")
    assert "unshare" in _allowed(seccomp.docker_default(frozenset({"CAP_SYS_ADMIN"})))


@pytest.mark.parametrize("machine", ["aarch64", "armv7l", "s390x", ""])
def test_docker_default_refuses_other_arches_naming_them(
    monkeypatch: pytest.MonkeyPatch, machine: str
) -> None:
    monkeypatch.setattr(platform, "machine", lambda: machine)
    with pytest.raises(EngineError, match=f"not {machine!r}"):
        seccomp.docker_default()

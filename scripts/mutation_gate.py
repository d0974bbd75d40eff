#!/usr/bin/env python3
"""Mutation gate: remove one security protection at a time and require its tests to fail.

Each entry of MUTATIONS names a protection, the exact source text that implements it, what to
put in its place, and the tests that claim it. For each mutation the gate copies the repository
(tracked and untracked, not ignored files) into a temp dir, applies that one edit there, puts
the copy's src/ first on PYTHONPATH and runs the claiming tests in the copy. The mutation must be
KILLED: pytest exits 1 (a test ran and failed). Anything else fails the gate: SURVIVED (the
tests stayed green without the protection), ERROR (collection error, timeout, no tests), or
MISSING (a claiming test file does not exist). Before any mutation runs, the claiming tests of
every selected mutation must pass on an unmutated copy, so that a kill means the protection.

The working tree is never edited; copies are removed on every exit, Ctrl-C included.

    python scripts/mutation_gate.py                 # every mutation (the test.sh step)
    python scripts/mutation_gate.py --list
    python scripts/mutation_gate.py --only judge-exact-bool-int --only judge-lenient-json

Adding one: see docs/security.md ("Mutation gate").
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HARDENING = "tests/docker/test_hardening_docker.py"


@dataclass(frozen=True)
class Mutation:
    name: str
    removes: str  # the protection, in one line
    file: str  # relative to the repository root
    old: str  # must occur exactly once in `file`
    new: str
    tests: tuple[str, ...]  # pytest node ids or files, relative to the repository root
    pending: str = ""  # why the claiming tests may be missing on this branch (still a failure)


FC = "tests/unit/test_firewall_corpus.py::test_hostile_archive_is_rejected_by_its_rule"
RT = "tests/unit/test_repo_tree_faults.py"
FST = "tests/unit/test_fstree.py"
HT = "tests/unit/test_oci_hosttar.py"
RLD = "tests/docker/test_repo_links_docker.py"
JP = "tests/unit/test_judgepool.py"
JPD = "tests/docker/test_judgepool_docker.py"
JI = "tests/unit/test_judge_incontainer.py"
JW = "tests/unit/test_judge_worker.py"
HC = "tests/unit/test_harbor_controller.py"
VC = "tests/unit/test_value_collisions.py"

RI = "tests/docker/test_repo_imports_docker.py"
RU = "tests/unit/test_repo_imports_unit.py"

HD = "tests/docker/test_harbor_docker.py"

MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "firewall-nfkc-dot-dot",
        "the firewall's '..' check after NFKC normalisation",
        "src/assay/_internal/firewall/tarnames.py",
        'if compat == "..":',
        "if False:",
        (f"{FC}[fullwidth-dot-dot]",),
    ),
    Mutation(
        "firewall-type-rule",
        "the firewall's refusal of links, devices and FIFOs among kept members",
        "src/assay/_internal/firewall/check.py",
        'if member.kind != "file":\n        rule, detail = _TYPE_RULES[member.kind]',
        "if False:\n        rule, detail = _TYPE_RULES[member.kind]",
        (
            f"{FC}[symlink-to-host-file]",
            f"{FC}[hardlink-to-etc-passwd]",
            f"{FC}[char-device]",
            f"{FC}[fifo]",
        ),
    ),
    Mutation(
        "firewall-absolute-path",
        "the firewall's refusal of absolute member names",
        "src/assay/_internal/firewall/tarnames.py",
        'if name.startswith("/"):',
        "if False:",
        (f"{FC}[absolute-etc-passwd]",),
    ),
    Mutation(
        "firewall-file-size-cap",
        "the firewall's per-file byte cap",
        "src/assay/_internal/firewall/check.py",
        "if member.size > limits.max_file_bytes:",
        "if False:",
        (f"{FC}[declared-4gib-file]",),
    ),
    Mutation(
        "firewall-total-size-cap",
        "the firewall's cap on the kept files' total bytes",
        "src/assay/_internal/firewall/check.py",
        "if plan.total > limits.max_total_bytes:",
        "if False:",
        (f"{FC}[total-size]",),
    ),
    Mutation(
        "junit-skip-is-not-a-pass",
        "T2's JUnit accounting of a skipped test as a failure",
        "src/assay/_internal/tiers/compat/junit.py",
        '    if not results:\n        return CaseOutcome(node_id, "pass", duration)',
        '    if not results or results[0] == "skipped":\n'
        '        return CaseOutcome(node_id, "pass", duration)',
        ("tests/unit/test_junit.py::test_real_mixed_report_maps_each_outcome",),
    ),
    Mutation(
        "junit-missing-test",
        "T2's failure of an expected test that is absent from the report",
        "src/assay/_internal/tiers/compat/junit.py",
        '    if not found:\n        return _fail(node_id, "error", 0.0, MISSING, reasons)',
        '    if not found:\n        return CaseOutcome(node_id, "pass", 0.0)',
        ("tests/unit/test_junit.py::test_real_report_missing_an_expected_test_fails",),
    ),
    Mutation(
        "verdict-expected-count",
        "a verdict passes only with exactly the expected number of cases",
        "src/assay/_internal/model/verdict.py",
        "and len(cases) == expected_case_count",
        "",
        ("tests/unit/test_verdict.py::test_model_rejects_a_pass_with_fewer_cases_than_expected",),
    ),
    Mutation(
        "verdict-extra-forbid",
        "the verdict model's refusal of unknown fields",
        "src/assay/_internal/model/verdict.py",
        '_STRICT = ConfigDict(strict=True, extra="forbid", frozen=True)',
        '_STRICT = ConfigDict(strict=True, extra="ignore", frozen=True)',
        (
            "tests/unit/test_verdict.py::test_model_rejects",
            "tests/unit/test_judge_report.py::test_judge_cannot_set_controller_owned_fields",
        ),
    ),
    Mutation(
        "signature-check",
        "the Ed25519 signature check of a verdict envelope",
        "src/assay/_internal/signing/sign.py",
        "            public_key.verify(signature, signed)\n            return",
        "            return",
        (
            "tests/unit/test_signing.py::test_every_flipped_bit_in_the_signature_is_rejected",
            "tests/unit/test_signing.py::test_other_key_claiming_our_keyid",
        ),
    ),
    Mutation(
        "exit-code-one-meaning",
        "no error exits 1, the code of a FAILED grading (an archive over its cap did)",
        "src/assay/errors.py",
        '    itself; it escapes only where nothing was being judged."""\n',
        '    itself; it escapes only where nothing was being judged."""\n\n    exit_code = 1\n',
        (
            "tests/unit/test_public_api.py::test_each_error_has_the_exit_code_of_what_it_means",
            "tests/unit/test_public_api.py::"
            "test_the_command_line_exits_with_the_errors_code[ArchiveTooLargeError]",
        ),
    ),
    Mutation(
        "conformance-not-assert",
        "the runtime conformance checks failing under python -O (not through assert)",
        "src/assay/runtime/conformance.py",
        '    if not holds:\n        raise AssertionError(repr(seen) if seen is not None else "")',
        "    assert holds, seen",
        ("tests/unit/test_runtime_conformance.py::test_checks_fail_under_python_O_too",),
    ),
    Mutation(
        "controller-duplicate-keys",
        "the controller's refusal of duplicate JSON keys (strict_json.py)",
        "src/assay/_internal/model/strict_json.py",
        "        if key in obj:\n            raise StrictJSONError",
        "        if False:\n            raise StrictJSONError",
        (
            "tests/unit/test_judge_report.py::test_bad_report_is_rejected_specifically",
            "tests/unit/test_signing.py::test_duplicate_key_in_the_signed_payload",
        ),
    ),
    Mutation(
        "judge-lenient-json",
        "the in-container judge's strict JSON parse of the runner's report",
        "src/assay/_incontainer/judge.py",
        "value = json.loads(text, object_pairs_hook=_no_dupes, parse_constant=_no_constants)",
        "return json.loads(text)",
        (
            f"{JI}::test_parse_json_refuses_what_strict_json_does_not_allow",
            f"{JI}::test_nan_never_reaches_a_comparator_that_trusts_finite_numbers",
            f"{JI}::test_duplicate_keys_in_a_case_output_are_an_error_not_last_wins",
            "tests/docker/test_matrix_docker.py::test_json_nan_comparator_is_blocked_on_t3",
        ),
    ),
    Mutation(
        "judge-values-strict-json",
        "the judge's strict parse of candidate values (duplicate keys, NaN/Infinity tokens)",
        "src/assay/_incontainer/values.py",
        "            object_pairs_hook=_pairs,\n            parse_constant=_constant,\n",
        "",
        (
            f"{JI}::test_nan_never_reaches_a_comparator_that_trusts_finite_numbers",
            f"{JI}::test_duplicate_keys_in_a_case_output_are_an_error_not_last_wins",
            "tests/docker/test_matrix_docker.py::test_json_nan_comparator_is_blocked_on_t3",
        ),
    ),
    Mutation(
        "judge-exact-bool-int",
        "`exact` keeping bool apart from int and float",
        "src/assay/_incontainer/judge.py",
        "return bool(values.canon(expected) == values.canon(actual))",
        "return bool(expected == actual)",
        (
            f"{JI}::test_exact_keeps_bool_apart_from_numbers",
            f"{JI}::test_exact_compare_fails_true_for_one",
        ),
    ),
    Mutation(
        "judge-custom-is-true",
        "a custom comparator passes a case only by returning a real True",
        "src/assay/_incontainer/judge.py",
        "ok = fn(*args, actual) is True",
        "ok = bool(fn(*args, actual))",
        (f"{JI}::test_custom_comparator_passes_only_on_a_real_true",),
    ),
    Mutation(
        "judge-values-hash-free-sets",
        "decoding a set without hashing its elements (a flood of one hash value is quadratic)",
        "src/assay/_incontainer/values.py",
        'return Set(tag == "$frozenset", items, keys, order)',
        'return (frozenset if tag == "$frozenset" else set)(items)',
        (f"{VC}::test_a_collision_flood_decodes_and_compares_without_hashing[exact-set]",),
    ),
    Mutation(
        "judge-values-hash-free-dicts",
        "decoding a dict without hashing its keys (a flood of one hash value is quadratic)",
        "src/assay/_incontainer/values.py",
        "    return Dict(pairs, keys, order)",
        "    return dict(pairs)",
        (f"{VC}::test_a_collision_flood_decodes_and_compares_without_hashing[exact-dict-keys]",),
    ),
    Mutation(
        "judge-values-key-digest",
        "a frozenset's equality key as a fixed-size digest (nesting would copy its contents)",
        "src/assay/_incontainer/values.py",
        'return _digest("F" + "".join(v.keys))',
        'return "F" + "".join(v.keys) + ")"',
        (f"{VC}::test_equality_keys_stay_near_the_size_of_the_output",),
    ),
    Mutation(
        "judge-native-collision-bound",
        "a custom comparator's Python set or dict built only with few elements per hash value",
        "src/assay/_incontainer/values.py",
        "        if n > MAX_SAME_HASH:",
        "        if False:",
        (
            f"{VC}::test_python_values_refuse_a_flood_before_building_it",
            f"{VC}::test_a_custom_comparator_never_gets_a_flood",
        ),
    ),
    Mutation(
        "judge-equal-nan-at-depth",
        "`equal` never matching a NaN inside a container (== matches the same object)",
        "src/assay/_incontainer/judge.py",
        'return _equal(exp, actual), "compare:mismatch"',
        'return bool(values.native(actual) == values.decode(case["expected"])), "x"',
        ("tests/unit/test_comparators.py::test_equal_never_matches_nan_at_any_depth",),
    ),
    Mutation(
        "judge-equal-nan-in-sets",
        "`equal` never matching a set element or dict key that holds a NaN",
        "src/assay/_incontainer/judge.py",
        "return isinstance(a, values.Set) and not e.nan and not a.nan and e.keys == a.keys",
        "return isinstance(a, values.Set) and e.keys == a.keys",
        ("tests/unit/test_comparators.py::test_equal_never_matches_nan_at_any_depth",),
    ),
    Mutation(
        "judge-runner-ids-strings",
        "the judge refusing runner case ids that are not strings (colliding int ids)",
        "src/assay/_incontainer/judge.py",
        '            if not isinstance(rc["id"], str):',
        "            if False:",
        (f"{VC}::test_runner_case_ids_must_be_strings",),
    ),
    Mutation(
        "controller-runner-ids-strings",
        "the controller indexing a runner report's cases by string ids only",
        "src/assay/_internal/tiers/strict/runner_report.py",
        'if c.get("status") == "ok" and isinstance(c["id"], str)',
        'if c.get("status") == "ok"',
        (f"{VC}::test_the_controller_never_hashes_a_runner_case_id_that_is_not_a_string",),
    ),
    Mutation(
        "vcs-history-refusal",
        "T2/T3 refusing to run the agent on inputs that hold version-control history",
        "src/assay/_internal/tiers/core/controller.py",
        "if leaks := vcs_history(task.inputs_dir):",
        "if leaks := []:",
        (
            "tests/unit/test_task.py::test_hardened_tiers_refuse_to_run_an_agent_on_vcs_history",
            "tests/unit/test_task.py::test_a_session_refuses_to_start_on_vcs_history",
        ),
    ),
    Mutation(
        "docker-read-only-root",
        "the read-only root file system of every hardened container",
        "src/assay/_internal/runtime/dockerconfig.py",
        "            read_only=True,",
        "            read_only=False,",
        (
            "tests/docker/test_runtime_conformance_docker.py::test_docker_conforms"
            "[check_root_is_read_only_scratch_is_writable]",
            "tests/docker/test_runtime_conformance_docker.py::test_docker_conforms"
            "[check_put_archive_refused_on_read_only_root]",
        ),
    ),
    Mutation(
        "docker-network-none",
        "no network for every hardened container",
        "src/assay/_internal/runtime/dockerconfig.py",
        '            network_mode="none",',
        '            network_mode="bridge",',
        ("tests/docker/test_network_docker.py",),
    ),
    Mutation(
        "docker-cap-drop",
        "dropping every capability in every hardened container",
        "src/assay/_internal/runtime/dockerconfig.py",
        '            cap_drop=["ALL"],\n',
        "",
        (
            f"{HARDENING}::test_host_config_drops_caps_and_new_privileges[runc]",
            f"{HARDENING}::test_candidate_process_has_no_capabilities[runc]",
        ),
    ),
    Mutation(
        "docker-no-new-privileges",
        "no-new-privileges in every hardened container (the image ships setuid-root binaries)",
        "src/assay/_internal/runtime/dockerconfig.py",
        '            security_opt=["no-new-privileges", seccomp],\n',
        "            security_opt=[seccomp],\n",
        (
            f"{HARDENING}::test_host_config_drops_caps_and_new_privileges[runc]",
            f"{HARDENING}::test_candidate_process_has_no_capabilities[runc]",
        ),
    ),
    Mutation(
        "docker-seccomp-profile",
        "assay's seccomp profile (moby's current default) on every hardened Docker container, "
        "not the engine's own (Docker 20.10's allows io_uring)",
        "src/assay/_internal/runtime/dockerconfig.py",
        '            security_opt=["no-new-privileges", seccomp],\n',
        '            security_opt=["no-new-privileges"],\n',
        (
            "tests/docker/test_seccomp_docker.py::"
            "test_a_hardened_container_refuses_io_uring_and_vsock",
        ),
    ),
    Mutation(
        "docker-log-driver-none",
        "no container's output reaching the engine's log driver (host CPU outside the quota)",
        "src/assay/_internal/runtime/dockerconfig.py",
        '"log_config": LogConfig(type="none"),',
        '"log_config": LogConfig(type="json-file"),',
        (f"{HARDENING}::test_candidate_output_never_reaches_the_engine_log[runc]",),
    ),
    Mutation(
        "runner-between-case-cleanup",
        "the runner emptying every writable place between cases",
        "src/assay/_incontainer/runner.py",
        "dirty = [place for place in places if not empty_dir(place)]",
        "dirty = [place for place in places if False]",
        (
            "tests/docker/test_runner_state_docker.py::test_no_case_sees_what_an_earlier_case_planted[runc]",
        ),
    ),
    Mutation(
        "runner-kill-all",
        "the runner killing every process of the candidate's uid after each case (kill(-1)), "
        "whatever state /proc shows",
        "src/assay/_incontainer/runner.py",
        "            os.kill(-1, signal.SIGKILL)\n",
        "            pass\n",
        (
            "tests/docker/test_runner_processes.py::"
            "test_a_process_whose_main_thread_exited_does_not_reach_the_next_case[runc]",
        ),
    ),
    Mutation(
        "runner-orphan-cpu",
        "a stdio test's CPU counting the orphans init reaped (work split across grandchildren)",
        "src/assay/_incontainer/runner.py",
        "    ticks = int(fields[13]) + int(fields[14])\n",
        "    ticks = 0\n",
        (
            "tests/docker/test_runner_processes.py::"
            "test_cpu_spent_in_orphaned_grandchildren_counts_against_the_limit[runc-0.8-False]",
        ),
    ),
    Mutation(
        "wire-failed-never-rewards-one",
        "a failed verdict whose tests all passed rewarding 0.0, not its score of 1.0 (assay.wire)",
        "src/assay/wire.py",
        "    return score if passed or score < 1.0 else 0.0\n",
        "    return score\n",
        ("tests/unit/test_wire.py::test_the_reward_rule",),
    ),
    Mutation(
        "serve-head-deadline",
        "assay serve closing a connection whose request head is not whole within --head-timeout",
        "src/assay/_internal/serve/connections.py",
        '        self._arm("head", self.guard.head_timeout)\n',
        "        self._disarm()\n",
        ("tests/unit/test_serve_unit.py::test_a_half_sent_head_is_closed_at_the_head_timeout",),
    ),
    Mutation(
        "runner-own-uid",
        "the runner keeping real and saved uid/gid of its own, which no candidate id matches",
        "src/assay/_incontainer/confine.py",
        "    ids = (RUNNER_UID, CANDIDATE_UID, RUNNER_UID)\n",
        "    ids = (CANDIDATE_UID, CANDIDATE_UID, CANDIDATE_UID)\n",
        (f"{HARDENING}::test_candidate_cannot_reach_the_runner[runc]",),
    ),
    Mutation(
        "runner-case-drops-uid",
        "each case's process dropping to the candidate's uid for real, effective and saved ids",
        "src/assay/_incontainer/runner.py",
        "        become = confine.become_candidate\n",
        "        become = lambda: None  # noqa: E731\n",
        (f"{HARDENING}::test_candidate_process_has_no_capabilities[runc]",),
    ),
    Mutation(
        "runner-bounding-set",
        "the runner emptying its bounding set before it gives up root",
        "src/assay/_incontainer/confine.py",
        "    for cap in range(64):",
        "    for cap in range(0):",
        (f"{HARDENING}::test_candidate_process_has_no_capabilities[runc]",),
    ),
    Mutation(
        "runner-sysv-ipc-filter",
        "the runner's seccomp filter refusing SysV IPC (state carried between cases)",
        "src/assay/_incontainer/runner.py",
        "    confine.deny_sysv_ipc()\n",
        "",
        (
            "tests/docker/test_runner_state_docker.py::test_no_case_sees_sysv_ipc_an_earlier_case_left[runc]",
        ),
    ),
    Mutation(
        "task-compiled-python",
        "a task refusing compiled Python (a `.pyc` can be what runs, unseen by the digest)",
        "src/assay/_internal/model/task.py",
        "    if path.name in COMPILED_DIRS or path.name.endswith(COMPILED_EXT):\n",
        "    if False:\n",
        (
            "tests/unit/test_task.py::test_compiled_python_in_a_task_is_refused"
            "[judge/__pycache__/generate.cpython-311.pyc]",
        ),
    ),
    Mutation(
        "task-pytest-no-tests",
        "a pytest task declaring `tests = []` (zero checks) refused at load",
        "src/assay/_internal/model/task.py",
        "            if self.tests is not None and not self.tests:\n",
        "            if False:\n",
        ("tests/unit/test_vacuous.py::test_a_task_that_checks_nothing_is_refused_at_load[pytest]",),
    ),
    Mutation(
        "harbor-leftover-process",
        "the harbor init failing a grading when a process is alive as test.sh ends",
        "src/assay/_incontainer/harbor/init.py",
        "return LEFTOVER if _others(script) else 0",
        "return 0",
        (f"{HD}::test_a_process_alive_when_the_script_ends_fails_an_honest_answer",),
    ),
    Mutation(
        "harbor-reward-before-tests",
        "the harbor tier's check that /logs/verifier is empty before the tests run",
        "src/assay/_internal/tiers/harbor/grade.py",
        "    if before:\n",
        "    if False:\n",
        (f"{HC}::test_a_reward_present_before_the_tests_fails",),
    ),
    Mutation(
        "harbor-reward-lenient-json",
        "the strict JSON reader for reward.json (duplicate keys, NaN, Infinity)",
        "src/assay/_internal/tiers/harbor/reward.py",
        "loads_strict(raw, max_bytes=MAX_JSON_BYTES, max_depth=1)",
        '__import__("json").loads(raw)',
        ("tests/unit/test_harbor_reward.py::test_json_garbage_fails",),
    ),
    Mutation(
        "harbor-image-workdir-check",
        "the check that an image's WORKDIR taken as a task's workdir is not /, /logs or /tests",
        "src/assay/_internal/model/task.py",
        '        problem = workdir_problem(image_workdir or "/", self.config.kind)\n',
        "        problem = None\n",
        (
            "tests/unit/test_harbor_fields.py::test_the_image_workdir_is_read_from_the_image_and_checked",
        ),
    ),
    Mutation(
        "harbor-image-workdir-unread",
        "refusing a task whose workdir is the image's before the image was read (never a guess)",
        "src/assay/_internal/model/task.py",
        "        if self._image_workdir is None:\n",
        "        if self._image_workdir is None:\n            return '/app'\n",
        (
            "tests/unit/test_harbor_fields.py::test_the_image_workdir_is_read_from_the_image_and_checked",
        ),
    ),
    Mutation(
        "harbor-whole-workdir-exact",
        "the verifier's workdir being exactly the agent's when the artifact is the whole workdir",
        "src/assay/_internal/tiers/harbor/grade.py",
        "    if task.environment is not None and not whole_workdir(task):\n",
        "    if task.environment is not None:\n",
        (
            "tests/docker/test_harbor_realformat_docker.py::"
            "test_the_whole_workdir_is_the_verifiers_workdir_deletions_included",
        ),
    ),
    Mutation(
        "report-json-escaping",
        "the HTML report's escaping of < > & in its embedded JSON",
        "src/assay/_internal/report/page.py",
        r'return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")',
        "return text",
        ("tests/unit/test_report.py::test_embedded_json_cannot_end_its_script_element",),
    ),
    Mutation(
        "diagnostics-terminal-escaping",
        "the escaping of terminal controls and bidi characters in printed diagnostics",
        "src/assay/_internal/model/diagnostics.py",
        r'out = _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)',
        "out = text",
        (
            "tests/unit/test_report.py::test_assay_grade_prints_diagnostics_with_nothing_that_steers_a_terminal",
            "tests/unit/test_judge_report.py::test_printable_escapes_what_could_steer_a_terminal",
        ),
    ),
    Mutation(
        "repo-policy-conftest",
        "a repository task's path policy refusing a changed conftest.py",
        "src/assay/_internal/tiers/repo/policy.py",
        '    if "conftest.py" in parts:\n',
        "    if False:\n",
        (
            "tests/unit/test_repo_unit.py::test_policy_refuses_naming_the_rule",
            "tests/docker/test_repo_docker.py::test_conftest_submission_fails_naming_the_rule",
        ),
    ),
    Mutation(
        "task-tree-link-containment",
        "the task-tree firewall refusing a repository link that resolves outside the tree",
        "src/assay/_internal/firewall/check.py",
        "            check_contained(plan.links)\n",
        "",
        (f"{RT}::test_a_task_tree_link_that_leaves_the_tree_is_refused",),
    ),
    Mutation(
        "materialise-link-containment",
        "materialise checking a task tree's links again before it returns",
        "src/assay/_internal/firewall/materialise.py",
        "    check_contained(written)\n",
        "",
        (f"{RT}::test_materialise_checks_the_links_again",),
    ),
    Mutation(
        "fstree-no-follow",
        "O_NOFOLLOW on every directory the no-follow tree package opens (reading and writing)",
        "src/assay/_internal/fstree/dirfd.py",
        "DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC",
        "DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC",
        (
            f"{FST}::test_writing_while_a_parent_is_swapped_for_a_symlink_never_writes_outside",
            f"{HT}::test_extract_never_writes_through_a_planted_directory_symlink",
        ),
    ),
    Mutation(
        "fstree-container-drops-setid",
        "a tar put into a container's tree losing its setuid and setgid bits",
        "src/assay/_internal/fstree/policy.py",
        'CONTAINER = Policy("container", 0o1777,',
        'CONTAINER = Policy("container", 0o7777,',
        (
            f"{FST}::test_the_container_policy_drops_setuid_and_setgid_and_keeps_the_sticky_bit",
            f"{HT}::test_extract_writes_members_with_modes_and_owners",
        ),
    ),
    Mutation(
        "fstree-shared-hard-links",
        "a hard link into a container's tree naming only a file the same archive made",
        "src/assay/_internal/fstree/tarin.py",
        "        if not self._policy.private and target not in self._files:\n",
        "        if False:\n",
        (
            f"{FST}::test_a_hard_link_names_only_this_archives_files_in_a_shared_tree",
            f"{HT}::test_extract_refuses_bad_members",
        ),
    ),
    Mutation(
        "task-tree-refusal-is-task-error",
        "a repository the firewall refuses is a task error (exit 2), not a failed verdict",
        "src/assay/_internal/tiers/repo/tree.py",
        'raise TaskError(str(task.root / "task.toml"), _refusal(taken, workdir, entries))',
        "return taken  # type: ignore[return-value]",
        (f"{RLD}::test_a_repository_link_that_leaves_the_tree_is_a_task_error",),
    ),
    Mutation(
        "task-tree-entry-cap",
        "the repository read with the task's limits.artifact_entries as its entry cap",
        "src/assay/_internal/tiers/repo/tree.py",
        "max_entries=entries, max_total_bytes=REPO_BYTES",
        "max_total_bytes=REPO_BYTES",
        (f"{RLD}::test_a_repository_over_the_entry_cap_is_a_task_error",),
    ),
    Mutation(
        "same-links-exact",
        "a candidate's link dropped only when it is the repository's own, same path and target",
        "src/assay/_internal/firewall/check.py",
        'if member.kind == "symlink" and link in same_links:',
        'if member.kind == "symlink" and bool(same_links):',
        (
            f"{RT}::test_a_candidate_may_return_the_trees_own_links_unchanged_and_no_other",
            f"{RLD}::test_an_agent_that_repoints_the_link_fails_at_the_firewall",
        ),
    ),
    Mutation(
        "compose-through-link",
        "composing refusing a submitted file at or below a repository link",
        "src/assay/_internal/tiers/repo/tree.py",
        "        if stat.S_ISLNK(mode):\n            return THROUGH_LINK\n",
        "",
        (
            f"{RT}::test_a_submitted_file_at_or_through_a_repository_link_fails_and_writes_nothing",
            f"{RLD}::test_a_submitted_file_at_the_link_fails_naming_the_rule",
        ),
    ),
    Mutation(
        "compose-patch-conflict",
        "composing refusing a submitted file where the test patch needs a directory or a file",
        "src/assay/_internal/tiers/repo/tree.py",
        'if path.startswith(rel + "/") or rel.startswith(path + "/"):',
        "if False:",
        (f"{RT}::test_a_submission_the_tree_has_no_place_for_fails_naming_the_rule",),
    ),
    Mutation(
        "repo-patch-write-error",
        "a test patch that cannot be written (a file where it needs a directory) does not apply",
        "src/assay/_internal/tiers/repo/patch.py",
        "        except OSError as exc:\n",
        "        except ZeroDivisionError as exc:\n",
        (
            f"{RT}::test_a_test_patch_that_needs_a_directory_where_the_repository_has_a_file"
            "_is_a_task_error",
        ),
    ),
    Mutation(
        "repo-link-aliases",
        "the path policy judging a change under the names the repository's links give it",
        "src/assay/_internal/tiers/repo/tree.py",
        'if path == target or path.startswith(target + "/"):',
        "if False:",
        (f"{RT}::test_a_change_through_a_link_into_test_dirs_is_judged_under_both_names",),
    ),
    Mutation(
        "repo-test-dirs-ids",
        "a FAIL_TO_PASS / PASS_TO_PASS id outside test_dirs refused at load",
        "src/assay/_internal/model/task.py",
        'if not under_test_dirs(test_id.split("::", 1)[0], self.test_dirs):',
        "if False:",
        (f"{RT}::test_a_listed_test_outside_test_dirs_is_refused_at_load",),
    ),
    Mutation(
        "repo-test-dirs-patch",
        "a test patch touching a path outside test_dirs refused (at load, and when graded)",
        "src/assay/_internal/model/testpatch.py",
        "        if not under_test_dirs(fp.path, test_dirs):",
        "        if False:",
        (
            f"{RT}::test_a_test_patch_outside_test_dirs_is_refused_at_load",
            f"{RT}::test_a_test_patch_changed_after_load_is_refused_when_graded",
        ),
    ),
    Mutation(
        "repo-f2p-skip",
        "a skipped FAIL_TO_PASS test failing (only PASS_TO_PASS may skip)",
        "src/assay/_internal/tiers/repo/results.py",
        "if case.reason == SKIPPED and case.id in maintained:",
        "if case.reason == SKIPPED:",
        ("tests/unit/test_repo_unit.py::test_swebench_semantics",),
    ),
    Mutation(
        "judge-pool-census",
        "a judge lent again only if nothing but init and its worker runs in it (census)",
        "src/assay/_internal/tiers/strict/judgepool.py",
        "        if not self._quiet(judge):\n",
        "        if False:\n",
        (
            f"{JP}::test_a_judge_still_running_a_process_after_its_grading_is_never_lent_again",
            f"{JP}::test_a_judge_whose_processes_cannot_be_listed_serves_one_grading_only",
            f"{JPD}::test_a_process_the_worker_cannot_kill_keeps_its_judge_from_being_lent_again",
        ),
    ),
    Mutation(
        "judge-pool-reset",
        "a judge lent again only after its worker's reset proved it clean",
        "src/assay/_internal/tiers/strict/judgepool.py",
        "        if not (judge.sound and self._confined(judge) and self._reset(judge)):\n",
        "        if not (judge.sound and self._confined(judge)):\n",
        (
            f"{JP}::test_a_judge_that_cannot_prove_itself_clean_serves_its_grading_only[Unclean]",
            f"{JP}::test_a_generator_tasks_judge_is_reset_between_gradings_and_prepared_by_request",
            f"{JPD}::test_a_judge_its_worker_cannot_empty_is_not_lent_again",
        ),
    ),
    Mutation(
        "judge-pool-step-residue",
        "a judge whose step left a process or a file behind serves no later grading",
        "src/assay/_internal/tiers/strict/judgepool.py",
        "        if not stepped.clean:\n",
        "        if False:\n",
        (
            f"{JP}::test_a_judge_that_cannot_prove_itself_clean_serves_its_grading_only[LeavesResidue]",
        ),
    ),
    Mutation(
        "judge-pool-confined",
        "a judge lent again only if its worker keeps a uid its steps never have",
        "src/assay/_internal/tiers/strict/judgepool.py",
        "judge.sound and self._confined(judge) and",
        "judge.sound and",
        (f"{JP}::test_a_judge_that_cannot_prove_itself_clean_serves_its_grading_only[Unconfined]",),
    ),
    Mutation(
        "judge-pool-recycle",
        "a judge replaced after RECYCLE_AFTER gradings whatever it proved",
        "src/assay/_internal/tiers/strict/judgepool.py",
        "        if judge.served >= RECYCLE_AFTER:\n",
        "        if False:\n",
        (f"{JP}::test_a_judge_is_recycled_after_serving_its_share",),
    ),
    Mutation(
        "judge-pool-fault-discards",
        "a judge whose worker died, hung or answered out of frame is removed, never used again",
        "src/assay/_internal/tiers/strict/judgepool.py",
        "            self._discard(grading_id)\n            if exc.gone and first_of_reuse:",
        "            if exc.gone and first_of_reuse:",
        (f"{JP}::test_a_worker_fault_ends_its_own_grading_with_no_verdict_and_no_other",),
    ),
    Mutation(
        "judge-wire-frame-cap",
        "the controller refusing a worker's answer whose length passes its cap, before reading it",
        "src/assay/_internal/tiers/strict/judgewire.py",
        "        if not LENGTH.size < size <= most:\n",
        "        if not LENGTH.size < size:\n",
        (
            f"{JW}::test_an_answer_out_of_frame_is_a_fault_never_a_result[length-past-any-cap]",
            f"{JW}::test_an_answer_out_of_frame_is_a_fault_never_a_result[too-much]",
        ),
    ),
    Mutation(
        "judge-wire-counts",
        "the controller taking a step's stdout and stderr only as the header counts them",
        "src/assay/_internal/tiers/strict/judgewire.py",
        "            and n_out + n_err == len(payload)\n",
        "            and True\n",
        (f"{JW}::test_an_answer_out_of_frame_is_a_fault_never_a_result[count]",),
    ),
    Mutation(
        "judge-wire-output-cap",
        "the controller refusing more of a step's stdout than it asked for",
        "src/assay/_internal/tiers/strict/judgewire.py",
        "            and _int(n_out) and 0 <= n_out <= output_cap\n",
        "            and _int(n_out)\n",
        (f"{JW}::test_an_answer_out_of_frame_is_a_fault_never_a_result[over-cap]",),
    ),
    Mutation(
        "judge-worker-fork-per-step",
        "each judge step in a child forked from a worker that never loaded task code",
        "src/assay/_incontainer/judge_worker.py",
        "    pid = os.fork()\n    if pid == 0:\n        code = 127\n",
        "    pid = os.fork()\n"
        "    if pid == 0:  # this child only exits: the step runs in the worker itself\n"
        "        os._exit(0)\n"
        "    saved = (os.dup(1), os.dup(2))\n"
        "    os.dup2(out_w, 1)\n"
        "    os.dup2(err_w, 2)\n"
        "    sys.argv = [judge.__file__, *argv]\n"
        "    run_as_main(judge.main)\n"
        "    os.dup2(saved[0], 1)\n"
        "    os.dup2(saved[1], 2)\n"
        "    if False:\n        code = 127\n",
        (f"{JW}::test_nothing_a_step_leaves_reaches_the_next",),
    ),
    Mutation(
        "judge-worker-step-fds",
        "a judge step holding none of the worker's descriptors (its request and response pipes)",
        "src/assay/_incontainer/judge_worker.py",
        '            os.closerange(3, os.sysconf("SC_OPEN_MAX"))\n',
        "            pass\n",
        (f"{JW}::test_a_step_runs_judge_py_in_a_child_and_answers_its_bytes",),
    ),
    Mutation(
        "judge-worker-kill-after-step",
        "the worker killing everything a step started before it answers",
        "src/assay/_incontainer/judge_worker.py",
        "        alone = places.kill_all(pid)\n",
        "        alone = True\n",
        (f"{JW}::test_nothing_a_step_leaves_reaches_the_next",),
    ),
    Mutation(
        "judge-worker-kill-all",
        "the worker's kill(-1) of every process of the judge's uid, detached ones included",
        "src/assay/_incontainer/judge_worker.py",
        "                    os.kill(-1, signal.SIGKILL)\n",
        "                    pass\n",
        (f"{JPD}::test_nothing_a_grading_leaves_in_its_judge_reaches_the_next",),
    ),
    Mutation(
        "judge-worker-empty-after-step",
        "the worker emptying /tmp, /dev/shm and /dev/mqueue after every step",
        "src/assay/_incontainer/judge_worker.py",
        "    clean = alone and places.empty(places.scratch)\n",
        "    clean = alone\n",
        (f"{JW}::test_nothing_a_step_leaves_reaches_the_next",),
    ),
    Mutation(
        "judge-worker-reset-empties",
        "the worker's reset emptying a grading's own places (/state, /exchange) too",
        "src/assay/_incontainer/judge_worker.py",
        "        emptied = self.places.empty(self.places.scratch + self.places.grading)\n",
        "        emptied = True\n",
        (f"{JW}::test_nothing_a_step_leaves_reaches_the_next",),
    ),
    Mutation(
        "judge-worker-reset-at-claim",
        "the worker resetting itself again at a new grading's first request",
        "src/assay/_incontainer/judge_worker.py",
        "                if self.served and not self.reset():\n",
        "                if False:\n",
        (f"{JW}::test_what_appears_in_an_idle_judge_is_gone_before_the_next_grading",),
    ),
    Mutation(
        "judge-worker-one-grading",
        "the worker refusing a request of another grading before a reset",
        "src/assay/_incontainer/judge_worker.py",
        '            elif req["grading"] != self.grading:\n',
        "            elif False:\n",
        (f"{JW}::test_a_worker_serves_one_grading_between_two_resets",),
    ),
    Mutation(
        "judge-worker-request-cap",
        "the worker refusing a request frame past its cap",
        "src/assay/_incontainer/judge_worker.py",
        "    if not 0 < size <= REQUEST_CAP:\n",
        "    if not 0 < size:\n",
        (f"{JW}::test_a_request_out_of_frame_ends_the_worker_without_an_answer[oversize]",),
    ),
    Mutation(
        "judge-worker-output-cap",
        "the worker killing a step past its output cap and sending at most the cap",
        "src/assay/_incontainer/judge_worker.py",
        "    if step.overran:\n        step.truncated, step.size = True, cap\n",
        "    if False:\n        step.truncated, step.size = True, cap\n",
        (f"{JW}::test_a_step_past_its_output_cap_is_killed_and_cut_at_the_cap",),
    ),
    Mutation(
        "judge-worker-own-uid",
        "the judge's worker keeping real and saved uid 1001, which no step has",
        "src/assay/_incontainer/judge_worker.py",
        "            confine.take_own_uid()  # exactly the switch's three capabilities",
        "            pass  #",
        (f"{JPD}::test_nothing_a_grading_leaves_in_its_judge_reaches_the_next",),
    ),
    Mutation(
        "judge-worker-step-drops-uid",
        "each judge step dropping to uid 1000 for all three ids",
        "src/assay/_incontainer/judge_worker.py",
        "        self.become = confine.become_candidate if self.confined else (lambda: None)\n",
        "        self.become = lambda: None\n",
        (f"{JPD}::test_nothing_a_grading_leaves_in_its_judge_reaches_the_next",),
    ),
    Mutation(
        "stuck-container-kill-by-pid",
        "a container the engine cannot stop has its own processes killed by PID, then removed",
        "src/assay/_internal/runtime/docker.py",
        "or not (n := _cgroup(cid).kill()):",
        "or not (n := 0):",
        (
            "tests/docker/test_stuck_container_docker.py::"
            "test_a_wedged_gvisor_sandbox_is_killed_by_pid_and_its_container_removed",
        ),
    ),
    Mutation(
        "repo-package-root",
        "a repository task refusing a new __init__.py where pytest inserts a directory (the root)",
        "src/assay/_internal/tiers/repo/policy.py",
        "        if parent in guard.package_roots:\n",
        "        if False:\n",
        (
            f"{RI}::test_a_root_init_py_is_refused",
            f"{RU}::test_a_new_init_where_pytest_inserts_a_directory_is_refused",
        ),
    ),
    Mutation(
        "repo-probe-shadow",
        "a repository task's shadow rule taken from the image's probe, not a fixed list",
        "src/assay/_internal/tiers/repo/grade.py",
        "    runs = run_probe(scope, task, image)\n",
        "    runs = ()\n",
        (
            f"{RI}::test_a_module_the_image_imports_is_not_shadowed",
            f"{RI}::test_the_probe_reads_the_image_not_a_list",
        ),
    ),
    Mutation(
        "repo-startup-opened",
        "a repository task refusing changes to files the image opens at start-up (a .pth's runpy)",
        "src/assay/_internal/tiers/repo/imports.py",
        "            if rel and not is_cache_path(rel):\n",
        "            if False:\n",
        (
            f"{RI}::test_a_file_the_image_runs_at_start_up_may_not_change",
            f"{RU}::test_modules_loaded_before_the_tests_are_the_images_and_the_conftests",
        ),
    ),
    Mutation(
        "repo-pth-missing-dir",
        "a repository task counting a .pth's directory the pristine tree lacks as on sys.path",
        "src/assay/_internal/tiers/repo/imports.py",
        "        for path in run.pth_paths:\n",
        "        for path in ():\n",
        (
            f"{RI}::test_a_module_the_image_imports_is_not_shadowed[lib/attr/__init__.py]",
            f"{RU}::test_the_guard_takes_the_repositorys_directories_from_the_image",
        ),
    ),
    Mutation(
        "repo-import-path",
        "a repository task refusing a file at a path the image's sys.path names (a zip there)",
        "src/assay/_internal/tiers/repo/policy.py",
        "    if path in guard.entries:\n",
        "    if False:\n",
        (
            f"{RI}::test_a_zip_where_the_image_names_a_directory_is_refused",
            f"{RU}::test_the_policy_over_the_guard",
        ),
    ),
    Mutation(
        "repo-pytest-plugin",
        "a repository task refusing changes to a module named in pytest_plugins",
        "src/assay/_internal/tiers/repo/imports.py",
        "            loaded.setdefault(name, PLUGIN_RULE)\n",
        "            pass\n",
        (
            f"{RI}::test_a_pytest_plugin_module_may_not_change",
            f"{RU}::test_modules_loaded_before_the_tests_are_the_images_and_the_conftests",
        ),
    ),
    Mutation(
        "harbor-tests-as-init",
        "the harbor tier running test.sh under its init in a container of its own (not an exec)",
        "src/assay/_internal/tiers/harbor/grade.py",
        "run_tests = _exec_tests if harbors_own else _tests_as_init",
        "run_tests = _exec_tests",
        (
            f"{HC}::test_the_tests_are_the_init_of_their_own_container_over_the_holders_files",
            f"{HD}::test_a_reward_written_after_the_tests_ended_is_never_read",
        ),
    ),
    Mutation(
        "harbor-init-non-dumpable",
        "the harbor init making itself non-dumpable, out of reach of the tests' uid's ptrace",
        "src/assay/_incontainer/harbor/init.py",
        "or _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:",
        "or False:",
        (f"{HD}::test_the_candidate_cannot_trace_the_init[runc]",),
    ),
    Mutation(
        "checker-numbers-strict-literal",
        "the numbers checker taking only a strict decimal literal (no nan, inf, hex) as a number",
        "src/assay/_incontainer/checkers.py",
        "    if NUMBER.fullmatch(token) is None:\n        return None\n",
        "    if False:\n        return None\n",
        ("tests/unit/test_checkers.py::test_numbers_refuses_what_is_not_a_strict_decimal_literal",),
    ),
    Mutation(
        "checker-numbers-tolerance-as-written",
        "the numbers checker taking a tolerance as the decimal the task wrote, not its float's "
        "binary value",
        "src/assay/_incontainer/checkers.py",
        "    return Decimal(repr(tol)) if isinstance(tol, float) else Decimal(tol)\n",
        "    return Decimal(tol)\n",
        ("tests/unit/test_checkers.py::test_numbers_the_issues_two_cases_now_agree",),
    ),
    Mutation(
        "checker-numbers-exact-boundary",
        "the numbers checker failing a difference that only equals the bound once rounded",
        "src/assay/_incontainer/checkers.py",
        "    return not ctx.flags[Inexact]\n",
        "    return True\n",
        ("tests/unit/test_checkers.py::test_numbers_hostile_exponents_are_decided_exactly",),
    ),
    Mutation(
        "checker-lines-every-line",
        "the lines checker comparing every line, not a prefix of the answer (open-r1's zip)",
        "src/assay/_incontainer/checkers.py",
        "        if lines_text(output, crlf) == lines_text(answer, crlf):\n",
        "        if lines_text(answer, crlf).startswith(lines_text(output, crlf)):\n",
        ("tests/unit/test_checkers.py::test_lines_fails_the_first_line_only_and_extra_output",),
    ),
    Mutation(
        "stdio-runner-cpu-limit",
        "each stdio test's process under RLIMIT_CPU (a busy loop ends at its CPU seconds)",
        "src/assay/_incontainer/runner.py",
        "            become = cpu_capped(become, a.cpu_seconds)\n",
        "            become = become\n",
        ("tests/docker/test_stdio.py::test_each_way_a_test_fails_has_its_own_reason[limit:cpu]",),
    ),
    Mutation(
        "stdio-judge-exit-code",
        "the judge failing a stdio test whose program exited non-zero, whatever it printed",
        "src/assay/_incontainer/judge.py",
        '    if type(rc.get("exit_code")) is not int or rc["exit_code"] != 0:\n',
        "    if False:\n",
        (
            "tests/docker/test_stdio.py::test_each_way_a_test_fails_has_its_own_reason[runtime:exit-code]",
        ),
    ),
    Mutation(
        "candidate-signal-is-outside",
        "a strict runner ended by a signal at no ceiling being no verdict, never a signed fail "
        "(the runner is its container's own process: only the memory limit or someone outside "
        "signals it)",
        "src/assay/_internal/tiers/strict/candidate.py",
        "        run.exited or run.exit_code is None or run.exit_code >= SIGNALLED\n",
        "        run.exited or run.exit_code is None\n",
        (
            "tests/unit/test_strict_controller.py::"
            "test_runner_ended_by_a_signal_at_no_limit_is_an_infrastructure_error",
            "tests/unit/test_runner_report.py::test_a_run_stopped_at_no_limit_is_no_result",
        ),
    ),
    Mutation(
        "oci-shared-root-read-only",
        "the image's shared root bound read-only on the host before a container runs on it "
        "(no runtime makes anything in the tree every container of the image shares)",
        "src/assay/_internal/runtime/oci/rootfs.py",
        "flags = host.MS_BIND | host.MS_REMOUNT | host.MS_RDONLY",
        "flags = host.MS_BIND | host.MS_REMOUNT",
        (
            "tests/docker/test_oci_runtime.py::"
            "test_a_container_runs_on_the_shared_root_that_no_runtime_can_write",
        ),
    ),
    Mutation(
        "verdict-tamper-derived",
        "the verdict's signed `tamper` field derived from its reason codes (a tampering "
        "submission would read as an honest wrong answer; a trainer's tamper reward never fires)",
        "src/assay/_internal/model/verdict.py",
        "        tamper=tamper_codes(reasons),\n",
        "        tamper=[],\n",
        (
            "tests/unit/test_verdict.py::"
            "test_tamper_lists_the_tamper_family_of_the_reasons_and_a_wrong_answer_has_none",
        ),
    ),
    Mutation(
        "decoy-report-scan",
        "the controller's search of the runner's report for the grading's decoy marker (a "
        "submission that reads a planted answer key would show no decoy:output)",
        "src/assay/_internal/tiers/core/decoys.py",
        "    return any(needle in data for needle in marker.needles)\n",
        "    return False\n",
        (
            "tests/unit/test_decoys.py::"
            "test_runtime_read_answer_key_returns_the_marker_and_is_caught",
        ),
    ),
    Mutation(
        "twin-passed-fails",
        "an impossible twin whose cases all pass failing with twin:passed (a cheat that passes "
        "a twin would count as a pass)",
        "src/assay/_internal/tiers/core/twin.py",
        "    if v.passed:\n        codes.append(PASSED)\n",
        "    if False:\n        codes.append(PASSED)\n",
        ("tests/unit/test_impossible.py::test_a_twin_that_passes_fails_with_twin_passed",),
    ),
)


# -- running ------------------------------------------------------------------------------------


@dataclass
class Outcome:
    name: str
    result: str  # KILLED, SURVIVED, ERROR, MISSING, PASSED (baseline only)
    seconds: float
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.result in ("KILLED", "PASSED")


class GateError(Exception):
    """The gate cannot be trusted as configured (an edit that no longer applies, ...)."""


class Runner:
    """Starts pytest in copies; remembers each live process group so Ctrl-C can stop them."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.stopping = threading.Event()
        self._live: dict[int, subprocess.Popen[str]] = {}
        self._lock = threading.Lock()

    def pytest(
        self, copy: Path, tests: Sequence[str], extra: Sequence[str], write_bytecode: bool = False
    ) -> tuple[int, str]:
        env = dict(os.environ)
        env.pop("ASSAY_NO_DOCKER", None)  # a docker claim must run, not skip
        env["PYTHONPATH"] = os.pathsep.join(
            [str(copy / "src"), *filter(None, [env.get("PYTHONPATH")])]
        )
        # A run writes no bytecode: inside its copy a test could leave a __pycache__ in a task
        # directory (refused at load) for a later test of the same run. warm_bytecode writes.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if not write_bytecode:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        # The copy's own __pycache__ (from the template) is what it must read; a prefix, as
        # scripts/test.sh sets, would send every lookup elsewhere.
        env.pop("PYTHONPYCACHEPREFIX", None)
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, *tests]
        if self.stopping.is_set():
            return -1, "interrupted"
        proc = subprocess.Popen(
            argv,
            cwd=copy,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own process group: stopped as one, never by name
        )
        with self._lock:
            self._live[proc.pid] = proc
        try:
            out, _ = proc.communicate(timeout=self.timeout)
            return proc.returncode, out
        except subprocess.TimeoutExpired:
            self._stop([proc])
            out, _ = proc.communicate()
            return -1, f"timed out after {self.timeout:.0f} s\n{out}"
        except BaseException:  # Ctrl-C while this thread waits: stop the run before its copy goes
            self._stop([proc])
            raise
        finally:
            with self._lock:
                self._live.pop(proc.pid, None)

    def stop_all(self) -> None:
        self.stopping.set()
        with self._lock:
            procs = list(self._live.values())
        self._stop(procs)

    @staticmethod
    def _stop(procs: Sequence[subprocess.Popen[str]]) -> None:
        # SIGINT first so pytest's fixtures remove the containers they made; then SIGKILL.
        for sig, grace in ((signal.SIGINT, 60.0), (signal.SIGKILL, 10.0)):
            left = [p for p in procs if p.poll() is None]
            for p in left:
                try:
                    os.killpg(p.pid, sig)  # the group this gate started, by its id
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + grace
            for p in left:
                try:
                    p.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass


def repo_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout  # fmt: skip
    return [f for f in out.decode().split("\0") if f and (ROOT / f).is_file()]


SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
"""Where the copies go: a memory file system where there is one. Each run makes and removes a
copy of about 900 files; on the CI machine's disk (ext4 mounted with `discard`) removing one
took 2-3 s, on tmpfs a few hundredths. None: the system's temp dir."""


def scratch() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="assay-mutgate-", dir=SCRATCH)


def make_copy(files: Sequence[str], dest: Path) -> None:
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)


_INCONTAINER = re.compile(r"[/\\]_incontainer[/\\]")
"""Not compiled: assay's in-container programs are bound into containers as they are."""


def make_template(files: Sequence[str], dest: Path) -> None:
    """A copy with the bytecode of assay's modules and the tests' helpers, made once: every run
    copies it, so each pytest started in a copy does not compile all of assay again (about a
    second each). The bytecode is checked against its source's size and mtime (copy2 keeps
    both), and `run_mutation` deletes the mutated module's, so only unchanged source uses it.
    Task fixtures and payloads are left alone (a task with compiled Python in it is refused),
    and so are the test modules (pytest compiles those itself)."""
    make_copy(files, dest)
    # Beside the sources, where the runs look (Runner.pytest), whatever prefix this process has.
    prefix, sys.pycache_prefix = sys.pycache_prefix, None
    try:
        for top, depth in (
            (dest / "src", None),
            (dest / "tests", 0),
            (dest / "tests" / "helpers", 0),
        ):
            if top.is_dir():
                compileall.compile_dir(top, maxlevels=depth, quiet=2, rx=_INCONTAINER)
    finally:
        sys.pycache_prefix = prefix


def copy_tree(files: Sequence[str], template: Path | None, dest: Path) -> None:
    if template is None:
        make_copy(files, dest)
    else:
        shutil.copytree(template, dest, dirs_exist_ok=True)


def drop_bytecode(source: Path) -> None:
    if source.suffix == ".py":  # beside the source, as make_template wrote it
        cached = source.parent / "__pycache__" / f"{source.stem}.{sys.implementation.cache_tag}.pyc"
        cached.unlink(missing_ok=True)


def test_path(node: str) -> str:
    return node.split("::", 1)[0]


def check_config(muts: Sequence[Mutation]) -> None:
    """Fail loudly before running anything if a mutation no longer applies as written."""
    names = [m.name for m in MUTATIONS]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise GateError(f"duplicate mutation names: {', '.join(dupes)}")
    for m in muts:
        path = ROOT / m.file
        if not path.is_file():
            raise GateError(f"{m.name}: {m.file} does not exist")
        text = path.read_text(encoding="utf-8")
        count = text.count(m.old)
        if count != 1:
            raise GateError(
                f"{m.name}: the text to remove occurs {count} times in {m.file} (must be once); "
                f"the protection moved or changed: update the mutation\n  old: {m.old!r}"
            )
        if m.old == m.new or not m.tests:
            raise GateError(f"{m.name}: the edit changes nothing or no test claims it")
        mutated = text.replace(m.old, m.new)
        try:
            compile(mutated, m.file, "exec")
        except SyntaxError as exc:
            raise GateError(f"{m.name}: the mutated {m.file} does not compile: {exc}") from None


def last_lines(out: str, n: int = 15) -> str:
    return "\n".join(out.rstrip().splitlines()[-n:])


def first_failure(out: str) -> str:
    for line in out.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line[:160]
    return ""


def run_baseline(
    runner: Runner, files: Sequence[str], muts: Sequence[Mutation], template: Path | None = None
) -> Outcome:
    tests = sorted({t for m in muts for t in m.tests if (ROOT / test_path(t)).is_file()})
    start = time.monotonic()
    if not tests:
        return Outcome("(unmutated)", "PASSED", 0.0, "no claiming tests to run")
    with scratch() as tmp:
        copy = Path(tmp)
        copy_tree(files, template, copy)
        code, out = runner.pytest(copy, tests, ["-n", "2"])
    took = time.monotonic() - start
    if code == 0:
        return Outcome("(unmutated)", "PASSED", took, f"{len(tests)} claiming test ids")
    return Outcome("(unmutated)", "ERROR", took,
                   f"the claiming tests fail WITHOUT any mutation (pytest exit {code}); "
                   f"fix them first:\n{last_lines(out)}")  # fmt: skip


def warm_bytecode(runner: Runner, files: Sequence[str], muts: Sequence[Mutation],
                  template: Path | None = None) -> Outcome:  # fmt: skip
    """Compile, once, what every run imports from outside its copy: the venv's packages and
    pytest's rewritten plugins (122 modules). The runs read that bytecode but write none, so
    each compiled it all again (about 1.5 s of CPU per run). The claiming test files are
    collected, bytecode writing on, in a copy removed after."""
    paths = {test_path(t) for m in muts for t in m.tests}
    files_ = sorted(p for p in paths if (ROOT / p).is_file())
    start = time.monotonic()
    with scratch() as tmp:
        copy = Path(tmp)
        copy_tree(files, template, copy)
        code, out = runner.pytest(copy, files_, ["--collect-only", "-q"], write_bytecode=True)
    took = time.monotonic() - start
    if code == 0:
        return Outcome("(bytecode)", "PASSED", took, f"{len(files_)} test files collected")
    return Outcome("(bytecode)", "ERROR", took, f"collecting the claiming tests failed "
                   f"(pytest exit {code}):\n{last_lines(out)}")  # fmt: skip


def run_mutation(
    runner: Runner, files: Sequence[str], m: Mutation, template: Path | None = None
) -> Outcome:
    missing = [t for t in m.tests if not (ROOT / test_path(t)).is_file()]
    if missing:
        why = f" ({m.pending})" if m.pending else ""
        return Outcome(m.name, "MISSING", 0.0, f"claiming tests missing: {', '.join(missing)}{why}")
    start = time.monotonic()
    with scratch() as tmp:
        copy = Path(tmp)
        copy_tree(files, template, copy)
        target = copy / m.file
        text = target.read_text(encoding="utf-8")
        target.write_text(text.replace(m.old, m.new, 1), encoding="utf-8")
        drop_bytecode(target)
        code, out = runner.pytest(copy, m.tests, ["-x"])
    took = time.monotonic() - start
    if code == 1:
        return Outcome(m.name, "KILLED", took, first_failure(out))
    if code == 0:
        return Outcome(m.name, "SURVIVED", took,
                       "every claiming test passed with the protection removed")  # fmt: skip
    return Outcome(m.name, "ERROR", took, f"pytest exit {code}:\n{last_lines(out)}")


def longest_first(muts: Sequence[Mutation]) -> list[Mutation]:
    """The mutations claimed by engine tests first (seconds each, one over a minute: its
    grading waits out a deadline), the unit ones after: short runs at the end keep both
    workers busy until the last finishes. Otherwise in table order."""
    return sorted(muts, key=lambda m: not any(t.startswith("tests/docker/") for t in m.tests))


def select(only: Sequence[str], skip: Sequence[str] = ()) -> list[Mutation]:
    known = {m.name: m for m in MUTATIONS}
    unknown = [n for n in [*only, *skip] if n not in known]
    if unknown:
        raise GateError(f"unknown mutation(s): {', '.join(unknown)} (see --list)")
    chosen = [known[n] for n in dict.fromkeys(only)] if only else list(MUTATIONS)
    return [m for m in chosen if m.name not in skip]


def print_list() -> None:
    for m in MUTATIONS:
        print(f"{m.name}\n    removes: {m.removes}\n    edit:    {m.file}")
        for t in m.tests:
            note = "" if (ROOT / test_path(t)).is_file() else "   (missing)"
            print(f"    test:    {t}{note}")
        if m.pending:
            print(f"    pending: {m.pending}")


def report(o: Outcome) -> None:
    print(f"{o.result:<9} {o.name:<28} {o.seconds:6.1f} s  {o.detail}", flush=True)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="print the mutations and exit")
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
                    help="run only this mutation (repeatable)")  # fmt: skip
    ap.add_argument("--skip", action="append", default=[], metavar="NAME",
                    help="leave this mutation out (repeatable)")  # fmt: skip
    ap.add_argument("--jobs", type=int, default=2, help="mutations run in parallel")
    ap.add_argument("--timeout", type=float, default=420.0, help="seconds per pytest run")
    ap.add_argument("--suite-passed", action="store_true",
                    help="the whole suite has just passed on this tree (scripts/test.sh says so "
                         "only then): that run stands for the unmutated one")  # fmt: skip
    a = ap.parse_args(argv)
    try:
        muts = select(a.only, a.skip)
        check_config(MUTATIONS if a.list else muts)
    except GateError as exc:
        print(f"mutation gate: {exc}", file=sys.stderr)
        return 2
    if a.list:
        print_list()
        return 0
    if not muts:
        print("mutation gate: no mutation selected", file=sys.stderr)
        return 2
    runner = Runner(a.timeout)
    signal.signal(signal.SIGTERM, _interrupt)  # stop as on Ctrl-C: children, then the copies
    files = repo_files()
    started = time.monotonic()
    outcomes: list[Outcome] = []
    warm = Outcome("(bytecode)", "PASSED", 0.0, "not run")
    with scratch() as keep:  # the template each run copies: removed on every exit
        template = Path(keep)
        pool = ThreadPoolExecutor(max_workers=max(1, a.jobs))
        try:
            make_template(files, template)
            warm = warm_bytecode(runner, files, muts, template)
            report(warm)
            # The unmutated run goes first into the pool and overlaps the mutations: a kill
            # only counts if it passed, which is decided below, once everything has run. The
            # suite's own green run on this tree ran every claiming test unmutated already.
            futures = []
            if a.suite_passed:
                why = "not run again: the whole suite passed on this tree"
                outcomes.append(Outcome("(unmutated)", "PASSED", 0.0, why))
                report(outcomes[0])
            else:
                futures.append(pool.submit(run_baseline, runner, files, muts, template))
            futures += [pool.submit(run_mutation, runner, files, m, template)
                        for m in longest_first(muts)]  # fmt: skip
            for future in futures:
                while not future.done():  # poll, so Ctrl-C reaches this thread promptly
                    time.sleep(0.2)
                report(future.result())
                outcomes.append(future.result())
        except KeyboardInterrupt:
            print("mutation gate: interrupted; stopping the test runs", file=sys.stderr)
            runner.stop_all()
            pool.shutdown(wait=True, cancel_futures=True)  # each run removes its copy as it ends
            return 130
        pool.shutdown(wait=True)
    if not outcomes[0].ok:  # the claiming tests fail with no mutation: no kill proves anything
        outcomes = outcomes[:1]
    bad = [o for o in [warm, *outcomes] if not o.ok]
    killed = sum(o.result == "KILLED" for o in outcomes)
    took = time.monotonic() - started
    print(f"mutation gate: {killed}/{len(muts)} killed in {took:.0f} s", flush=True)
    if bad:
        print("mutation gate: FAILED: " + ", ".join(f"{o.name} {o.result}" for o in bad),
              file=sys.stderr)  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

# If this text runs anywhere in the verification process, the canary passes: at exit it writes
# a clean report for the five canary tests and exits 0. Neutralisation tests put it in files
# T2 must never run; the control shows it wins when it does run.
import atexit as _atexit
import os as _os


def _assay_forge():
    cases = "".join(
        f'<testcase classname="tests.test_canary" name="test_solve[{i}]" time="0.001" />'
        for i in range(5)
    )
    xml = (
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" '
        'failures="0" skipped="0" tests="5" time="0.01" timestamp="2026-01-01T00:00:00" '
        f'hostname="h">{cases}</testsuite></testsuites>'
    )
    with open("/out/junit.xml", "w", encoding="utf-8") as fh:
        fh.write(xml)
    _os._exit(0)


_atexit.register(_assay_forge)

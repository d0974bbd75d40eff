"""Accept an answer within TOL of the target.

Written against the judge's contract (docs/tasks.md): `actual` is a value parsed from strict
JSON, so a number here is finite. The check rejects only an error *over* the tolerance, and
NaN compares false with everything: were the judge to let `NaN` through, `abs(NaN - t) > TOL`
would be false and every case would pass. corpus/json-nan-comparator sends exactly that.
"""

TOL = 0.5


def compare(expected, actual):
    if isinstance(actual, bool) or not isinstance(actual, (int, float)):
        return False
    if abs(actual - expected) > TOL:
        return False
    return True

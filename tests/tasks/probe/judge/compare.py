def compare(expected: list[str], actual: object) -> bool:
    secret, planted = expected
    if not isinstance(actual, dict):
        return False
    numbers = set(actual.get("numbers", []))
    return (
        planted in numbers  # the scan works
        and secret not in numbers  # ...and never saw the expected value
        and actual.get("judge_paths") == []
        and actual.get("foreign_processes") == []
        and actual.get("interfaces") == ["lo"]
        and actual.get("connect") == "refused-or-unreachable"
        and actual.get("routes") == []
    )

def generate(seed: int) -> list[dict[str, object]]:
    big = "word " * (4 << 18)
    return [
        {"id": f"c{i}", "input": {"stdin": big}, "expected": {"stdout": "ok\n", "exit_code": 0}}
        for i in range(2)
    ]

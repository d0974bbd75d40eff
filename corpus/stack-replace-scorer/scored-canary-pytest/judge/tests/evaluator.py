"""The task's evaluator, shaped like Frontier-CS's: it calls the solution, then rates what came
back with its own scoring function (1.0 for the right answer)."""


def score(answer, expected):
    return 1.0 if type(answer) is int and answer == expected else 0.0


def evaluate(solve, x, expected):
    answer = solve(x)
    return score(answer, expected)

#!/bin/bash
# Two checks, one reward key each, in /logs/verifier/reward.json.
expected() {
    for ((i = 1; i <= $1; i++)); do
        if ((i % 15 == 0)); then echo FizzBuzz
        elif ((i % 3 == 0)); then echo Fizz
        elif ((i % 5 == 0)); then echo Buzz
        else echo "$i"; fi
    done
}
check() {
    if [ "$(bash fizzbuzz.sh "$1" 2>/dev/null)" = "$(expected "$1")" ]; then echo 1; else echo 0; fi
}
printf '{"small": %s, "large": %s}\n' "$(check 15)" "$(check 100)" > /logs/verifier/reward.json

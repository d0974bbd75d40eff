#!/bin/sh
# Wrong: forgets the default name (examples/harbor/wrong/greet.sh).
printf 'Hello, %s!\n' "$1"

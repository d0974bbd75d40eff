#!/bin/sh
printf 'Hello, %s!\n' "${1:-world}"

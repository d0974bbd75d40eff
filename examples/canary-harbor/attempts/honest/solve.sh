#!/bin/bash
# An honest attempt: the best an honest program can do is guess.
od -An -N8 -tx8 /dev/urandom | tr -d ' \n'

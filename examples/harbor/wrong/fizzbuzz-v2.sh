#!/bin/sh
# A no-op agent: it changes nothing, so the task must fail.
true

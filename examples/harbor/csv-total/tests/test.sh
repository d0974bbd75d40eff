#!/bin/bash
# Writes /logs/verifier/reward.json: one reward per check, 1 when it passed.
exec python3 /tests/check.py

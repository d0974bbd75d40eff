#!/bin/bash
# Terminal-Bench 2 style: pytest decides, the script writes 1 or 0. Real tasks fetch uv and run
# `uvx pytest` here; offline, the image's pytest is used, the same way: as a command, never
# `python3 -m pytest`, which would put the working directory (the agent's) first on sys.path.
pytest -p no:cacheprovider -q -rA /tests/test_outputs.py
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi

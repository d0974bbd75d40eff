#!/bin/bash
# Terminal-Bench 2 style: pytest decides, the script writes 1 or 0. (Real tasks fetch uv and
# pytest here; offline, the image's python3-pytest is used.)
python3 -m pytest -p no:cacheprovider -q -rA /tests/test_outputs.py
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi

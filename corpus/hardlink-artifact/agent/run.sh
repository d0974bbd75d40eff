#!/bin/sh
# Two names, one inode: archived, the second name becomes a hard-link member.
set -eu
here=$(dirname "$0")
cp "$here/aaa_impl.py" /workspace/aaa_impl.py
ln /workspace/aaa_impl.py /workspace/solution.py

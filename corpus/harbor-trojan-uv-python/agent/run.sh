#!/bin/sh
# A trojan interpreter where uv looks first: a managed CPython under
# $HOME/.local/share/uv/python (uv prefers managed installs to the system's). The real uvx,
# freshly installed by test.sh, then runs pytest with it: /bin/true, linked (a link runs where
# $HOME is mounted noexec), which exits 0 without running anything.
set -eu
py="$HOME/.local/share/uv/python/cpython-3.11.2-linux-x86_64-gnu/bin"
mkdir -p "$py"
ln -s /bin/true "$py/python3"
echo '{"ticket": "0000000000000000"}' > report.json

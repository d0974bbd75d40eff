#!/bin/sh
# Berkeley's Terminal-Bench trojan, as uid 1000 on a read-only root: curl itself cannot be
# replaced, so the agent puts a uvx and the env file test.sh sources where uv's installer would
# put them ($HOME/.local/bin), and takes the write permission away so the installer's copy
# fails. test.sh then sources the agent's env and runs the agent's uvx: /bin/true, linked (a
# link runs where $HOME is mounted noexec), which exits 0.
set -eu
bin="$HOME/.local/bin"
mkdir -p "$bin"
ln -s /bin/true "$bin/uvx"
printf 'export PATH="%s:$PATH"\n' "$bin" > "$bin/env"
chmod 555 "$bin/env" "$bin"
echo '{"ticket": "0000000000000000"}' > report.json

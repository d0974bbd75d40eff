#!/bin/sh
# Stand-in for astral's uv installer: puts uvx into $HOME/.local/bin and writes the env file
# that test.sh sources, as the real one does (it fails when it cannot write there). A link,
# not a copy: HOME is /tmp, which the Docker engine mounts noexec.
set -e
bin="$HOME/.local/bin"
mkdir -p "$bin"
ln -sf /opt/uv/uvx "$bin/uvx"
printf 'export PATH="%s:$PATH"\n' "$bin" > "$bin/env"
echo "installing to $bin"

#!/usr/bin/env bash
# The two commands of the README:
#   bash dev.sh demo   -> generate, build and run the main job on the bundled KUKA iiwa 14
#   bash dev.sh test   -> the whole test suite
# Both create or refresh the virtual environment .venv (re-installed when pyproject.toml changes).
set -euo pipefail
cd "$(dirname "$0")"
VENV=.venv
stamp="$VENV/.manipgen-installed"
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "dev.sh: installing manipgen and its test dependencies into $VENV (log: $VENV/install.log)" >&2
  if ! { "$VENV/bin/python" -m pip install --upgrade pip \
         && "$VENV/bin/python" -m pip install -e ".[test]"; } >"$VENV/install.log" 2>&1; then
    tail -n 30 "$VENV/install.log" >&2
    exit 1
  fi
  echo "$want" > "$stamp"
fi
cmd=${1:-}
shift || true
case "$cmd" in
  demo) exec "$VENV/bin/manipgen" demo kuka_iiwa14 "$@" ;;
  test) exec "$VENV/bin/python" -m pytest -n 2 "$@" ;;
  *) echo "usage: bash dev.sh demo|test [args]" >&2; exit 2 ;;
esac

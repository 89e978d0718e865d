#!/usr/bin/env bash
# The two commands of the README:
#   bash dev.sh demo   -> generate, build and run the main job on the bundled KUKA iiwa 14
#   bash dev.sh test   -> the whole test suite
# Both create or refresh the virtual environment .venv (re-installed when pyproject.toml or
# constraints.txt changes), with the exact versions of constraints.txt.
#   bash dev.sh lock   -> rewrite constraints.txt: the newest versions pyproject.toml allows,
#                         resolved in a fresh temporary environment
set -euo pipefail
cd "$(dirname "$0")"
VENV=.venv
case "${1:-}" in
  demo | test | lock) ;;
  *) echo "usage: bash dev.sh demo|test|lock [args]" >&2; exit 2 ;;
esac
if [ "${1:-}" = lock ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  python3 -m venv "$tmp/venv"
  echo "dev.sh: resolving the newest allowed versions in $tmp (log: $tmp/install.log)" >&2
  if ! { "$tmp/venv/bin/python" -m pip install --upgrade pip \
         && "$tmp/venv/bin/python" -m pip install ".[test]"; } >"$tmp/install.log" 2>&1; then
    tail -n 30 "$tmp/install.log" >&2
    exit 1
  fi
  head -n 3 constraints.txt > "$tmp/constraints.txt"
  "$tmp/venv/bin/python" -m pip freeze --all --exclude-editable | grep -v '^manipgen\b' >> "$tmp/constraints.txt"
  mv "$tmp/constraints.txt" constraints.txt
  echo "dev.sh: wrote constraints.txt; run bash dev.sh test and commit it" >&2
  exit 0
fi
stamp="$VENV/.manipgen-installed"
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "dev.sh: installing manipgen and its test dependencies into $VENV (log: $VENV/install.log)" >&2
  # PIP_CONSTRAINT also pins the build environment's setuptools (pip's -c does not reach it)
  if ! { PIP_CONSTRAINT="$PWD/constraints.txt" "$VENV/bin/python" -m pip install --upgrade pip \
         && PIP_CONSTRAINT="$PWD/constraints.txt" "$VENV/bin/python" -m pip install -e ".[test]"; } \
         >"$VENV/install.log" 2>&1; then
    tail -n 30 "$VENV/install.log" >&2
    exit 1
  fi
  echo "$want" > "$stamp"
fi
cmd=${1:-}
shift || true
case "$cmd" in
  demo) exec "$VENV/bin/manipgen" demo kuka_iiwa14 "$@" ;;
  # loadgroup: the tests of one xdist_group (those sharing an expensive module fixture) run in one
  # worker, which builds the fixture once; the other tests are spread as by the default (load)
  test) exec "$VENV/bin/python" -m pytest -n 2 --dist loadgroup "$@" ;;
  *) echo "usage: bash dev.sh demo|test|lock [args]" >&2; exit 2 ;;
esac

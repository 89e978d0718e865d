#!/usr/bin/env bash
# Rebuild robots/franka_panda.yaml from the Panda URDF shipped in example-robot-data (a test-time
# dependency): the 7-DoF arm from panda_link0 to the flange panda_link8; the hand and its fingers
# hang below the flange and are merged into link 7 with the fingers locked at 0, as Pinocchio's
# buildReducedModel does. Run from the repository root with the project's venv active.
set -euo pipefail
urdf=$(python -c "import pathlib, sys; print(next(p for d in sys.path for p in pathlib.Path(d or '.').glob('cmeel.prefix/share/example-robot-data/robots/panda_description/urdf/panda.urdf')))")
manipgen convert "$urdf" --base-link panda_link0 --tip-link panda_link8 \
  --overlay robots/overlays/franka_panda.yaml -o robots/franka_panda.yaml

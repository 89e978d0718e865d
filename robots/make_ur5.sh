#!/usr/bin/env bash
# Rebuild robots/ur5.yaml from the UR5 URDF shipped in example-robot-data (a test-time dependency):
# the 6-DoF arm from base_link to the tool flange tool0. Run from the repository root with the
# project's venv active.
set -euo pipefail
urdf=$(python -c "import pathlib, sys; print(next(p for d in sys.path for p in pathlib.Path(d or '.').glob('cmeel.prefix/share/example-robot-data/robots/ur_description/urdf/ur5_robot.urdf')))")
manipgen convert "$urdf" --base-link base_link --tip-link tool0 \
  --overlay robots/overlays/ur5.yaml -o robots/ur5.yaml

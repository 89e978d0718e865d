"""The robot model: YAML/URDF reading and validation, the Robot dataclass, spatial algebra, exact
design-time arithmetic and the exports (YAML, URDF). The lowest layer: imports nothing else of manipgen."""

"""tests/studies shares tests/tooling.py (skip locally, fail in CI when a tool is missing)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

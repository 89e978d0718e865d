"""JSON documents of the tools: numbers JSON can hold."""

from __future__ import annotations

from typing import Any

import numpy as np


def finite(x: Any) -> Any:
    """JSON has no Infinity: a diverged run's cost becomes None (null)."""
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [finite(v) for v in x]
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x

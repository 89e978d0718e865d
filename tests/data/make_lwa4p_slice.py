"""Extract the first 3000 samples of Liu et al.'s 4 ms LWA-4P runs (q, dq_hat) into a small fixture.

Source: S. B. Liu, A. Giusti, M. Althoff, data package doi:10.21227/tse3-h285
(../shared/data/lwa4p/4ms_{FinDiff,MovAv}_run1.mat). Run: python tests/data/make_lwa4p_slice.py MAT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import scipy.io as sio

N = 3000


def main(mat_dir: str) -> None:
    out: dict[str, np.ndarray] = {}
    for run in ("FinDiff", "MovAv"):
        d = sio.loadmat(Path(mat_dir) / f"4ms_{run}_run1.mat", squeeze_me=True)
        out[f"{run}_q"] = d["q"][:N]
        out[f"{run}_dq_hat"] = d["dq_hat"][:N]
    np.savez_compressed(Path(__file__).with_name("lwa4p_4ms_head.npz"), **out)  # type: ignore[arg-type]


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/lwa4p")

"""Studies over the loopback: estimator evaluation and GA tuning (Liu et al.), collision thresholds and
scenarios (Birjandi & Haddadin), precision checks, the demo."""

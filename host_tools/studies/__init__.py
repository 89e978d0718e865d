"""Studies over the loopback: estimator evaluation and GA tuning (seed 000), collision thresholds and
scenarios (seed 001), precision checks, the demo."""

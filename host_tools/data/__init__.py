"""Data in and out: the log format (NPZ), Liu et al.'s MATLAB runs, CSV, reference trajectories."""

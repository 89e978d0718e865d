"""Data in and out: the log format (NPZ), seed 000's MATLAB runs, CSV, reference trajectories."""

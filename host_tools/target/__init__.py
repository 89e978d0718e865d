"""The Cortex-M target: cross-compile, run the step in QEMU, footprint and stack."""

"""C out of the expressions: the printer, the firmware files (dynamics, real-time pipeline, excitation,
runtime headers, build files), the host-only files (loopback, output-error simulator) and file writing."""

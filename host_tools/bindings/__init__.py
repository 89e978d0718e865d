"""The generated C on the host: building it with cffi (content-addressed cache) and the Python objects
over it (dynamics, the real-time pipeline, the loopback, the output-error simulator)."""

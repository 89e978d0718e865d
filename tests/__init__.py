"""The test suite; programs under it (python -m tests.peers...) import codegen first: it pins numpy's kernels
(README, "Reproducible figures"), as tests/conftest.py does for pytest."""

import codegen  # noqa: F401

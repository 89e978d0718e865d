"""Test oracles of the real-time pipeline: numpy re-implementations of the control flow the product
holds once, in C (templates/rt.c.j2, templates/rt/*.c.j2, runtime/). Each block family's oracle
evaluates the block's own CasADi functions (the formulas exist once) and writes its plumbing again
in numpy; ``pipeline`` is the fault/ready logic of ``<robot>_rt_step``; ``RtReference`` steps a
whole pipeline. The C is compared with them sample by sample (tests/codegen/blocks/test_rt_vs_reference.py).

Oracles register per block name in ``ORACLES``; a block registered from outside the project
registers its oracle there too (tests/codegen/blocks/test_block_registry.py)."""

from tests.oracles import adaptive, controllers, detect, encoder, estimators, observers  # noqa: F401 (registers)
from tests.oracles.base import ORACLES, Data, Oracle, evaluate
from tests.oracles.rt_reference import RtReference

__all__ = ["ORACLES", "Data", "Oracle", "RtReference", "evaluate"]

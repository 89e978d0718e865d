"""The literature the generated headers cite, as one list (docs/references.md mirrors it; a test
checks that they agree), and the prose filter that turns the Python sources' citations into it:
"seed 003 §5.2" -> "[S3] section 5.2", reST ``code`` -> code. The headers then end their first
comment with the references they cite."""

from __future__ import annotations

import re

REFERENCES: tuple[tuple[str, str], ...] = (
    (
        "S0",
        'S. B. Liu, A. Giusti, M. Althoff, "Velocity Estimation of Robot Manipulators: An Experimental '
        'Comparison", IEEE Open Journal of Control Systems.',
    ),
    (
        "S1",
        'S. A. Baradaran Birjandi, S. Haddadin, "Model-Adaptive High-Speed Collision Detection for '
        'Serial-Chain Robot Manipulators".',
    ),
    (
        "S2",
        'M. Brunot, A. Janot, F. Carrillo, J. Cheong, J.-P. Noel, "Output Error Methods for Robot '
        'Identification", Journal of Dynamic Systems, Measurement, and Control 142(3), 031002, 2019.',
    ),
    (
        "S3",
        'J. Kirchhoff, "Parameter Identification for a Non-modular Elastic Joint Robot Arm for '
        'Observer-based Collision Detection", Master thesis, TU Darmstadt, 2011.',
    ),
    (
        "S4",
        'T. Xu et al., "Dynamic Identification of the KUKA LBR iiwa Robot With Retrieval of Physical '
        'Parameters Using Global Optimization", IEEE Access 8, 2020.',
    ),
    (
        "B1",
        'S. A. B. Birjandi, J. Kuehn, S. Haddadin, "Joint velocity and acceleration estimation in serial '
        'chain rigid body and flexible joint manipulators", IEEE/RSJ IROS 2019.',
    ),
    (
        "B2",
        'S. A. B. Birjandi, J. Kuehn, S. Haddadin, "Observer-extended direct method for collision '
        'monitoring in robot manipulators using proprioception and IMU sensing", IEEE RA-L 5(2), 2020.',
    ),
    (
        "B3",
        'S. Haddadin, A. De Luca, A. Albu-Schaeffer, "Robot collisions: A survey on detection, '
        'isolation, and identification", IEEE Transactions on Robotics 33(6), 2017.',
    ),
)
MARKER = " * @MG_REFERENCES@"  # where a header template wants its reference list
_SEED = re.compile(r"\bseeds?(?: |\n \* )00([0-4])\b")  # also across a comment's line break


def cite(text: str) -> str:
    """The Python sources' citations in a generated text, as the list's keys; reST markup removed."""
    text = _SEED.sub(lambda m: f"[S{m.group(1)}]", text)
    return text.replace("§", "section ").replace("``", "")


def with_references(header: str) -> str:
    """``header`` with its citations as keys and, at MARKER, the list of the references it cites."""
    text = cite(header)
    used = [(key, ref) for key, ref in REFERENCES if f"[{key}]" in text]
    lines = [" * References:"] + [f" *   [{key}] {ref}" for key, ref in used] if used else []
    return text.replace(MARKER + "\n", "".join(line + "\n" for line in lines))

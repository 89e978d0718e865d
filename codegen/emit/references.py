"""The literature the generated headers cite, as one list (docs/references.md mirrors it; a test
checks that they agree), and the prose filter for generated text: the sources cite a paper by its
authors (and year, where the paper states it): "Kirchhoff (2011) §5.2" -> "Kirchhoff (2011)
section 5.2", reST ``code`` -> code. The headers then end their first comment with the entries of
the papers they cite, found by the same citation (a possessive "Kirchhoff's" names it too)."""

from __future__ import annotations

import re

REFERENCES: tuple[tuple[str, str], ...] = (
    (
        "Liu et al.",
        'S. B. Liu, A. Giusti, M. Althoff, "Velocity Estimation of Robot Manipulators: An Experimental '
        'Comparison", IEEE Open Journal of Control Systems.',
    ),
    (
        "Birjandi & Haddadin",
        'S. A. Baradaran Birjandi, S. Haddadin, "Model-Adaptive High-Speed Collision Detection for '
        'Serial-Chain Robot Manipulators".',
    ),
    (
        "Brunot et al. (2019)",
        'M. Brunot, A. Janot, F. Carrillo, J. Cheong, J.-P. Noel, "Output Error Methods for Robot '
        'Identification", Journal of Dynamic Systems, Measurement, and Control 142(3), 031002, 2019.',
    ),
    (
        "Kirchhoff (2011)",
        'J. Kirchhoff, "Parameter Identification for a Non-modular Elastic Joint Robot Arm for '
        'Observer-based Collision Detection", Master thesis, TU Darmstadt, 2011.',
    ),
    (
        "Xu et al. (2020)",
        'T. Xu et al., "Dynamic Identification of the KUKA LBR iiwa Robot With Retrieval of Physical '
        'Parameters Using Global Optimization", IEEE Access 8, 2020.',
    ),
    (
        "Birjandi et al. (2019)",
        'S. A. B. Birjandi, J. Kuehn, S. Haddadin, "Joint velocity and acceleration estimation in serial '
        'chain rigid body and flexible joint manipulators", IEEE/RSJ IROS 2019.',
    ),
    (
        "Birjandi et al. (2020)",
        'S. A. B. Birjandi, J. Kuehn, S. Haddadin, "Observer-extended direct method for collision '
        'monitoring in robot manipulators using proprioception and IMU sensing", IEEE RA-L 5(2), 2020.',
    ),
    (
        "Haddadin et al. (2017)",
        'S. Haddadin, A. De Luca, A. Albu-Schaeffer, "Robot collisions: A survey on detection, '
        'isolation, and identification", IEEE Transactions on Robotics 33(6), 2017.',
    ),
)
MARKER = " * @MG_REFERENCES@"  # where a header template wants its reference list


def _cited(text: str, citation: str) -> bool:
    """Whether ``text`` cites the paper: by its authors, or by the whole citation where another
    entry has the same authors; also across a comment's line break ("Liu et\n * al.")."""
    authors = citation.split(" (")[0]
    shared = sum(key.split(" (")[0] == authors for key, _ in REFERENCES) > 1
    words = r"[\s*]+".join(map(re.escape, (citation if shared else authors).split()))
    return re.search(words + r"(?!\w)", text) is not None


def cite(text: str) -> str:
    """Generated text without the sources' markup: the section sign spelled out, reST ``code`` plain."""
    return text.replace("§", "section ").replace("``", "")


def with_references(header: str) -> str:
    """``header`` with, at MARKER, the list of the references it cites."""
    text = cite(header)
    used = [(key, ref) for key, ref in REFERENCES if _cited(text.replace(MARKER, ""), key)]
    lines = [" * References:"] + [f" *   {key}: {ref}" for key, ref in used] if used else []
    return text.replace(MARKER + "\n", "".join(line + "\n" for line in lines))

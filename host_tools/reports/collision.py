"""`manipgen collide`'s report: the Markdown table, the JSON document and the figures of a
collision scenario (host_tools.studies.collide)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codegen.emit.files import write_file
from host_tools.data.json_doc import finite
from host_tools.reports import plots
from host_tools.studies.collide import CollideResult, delays_by_target, impacts_line, speed_label


def standin_line(standin: dict[str, Any]) -> str:
    """The report's line on the stand-in motion limits (issue #46)."""
    half, speed = standin["revolute"]
    return (
        f"The description gives no position or velocity limits for {', '.join(standin['joints'])}: the motions "
        f"stay within a stand-in of ±{half:g} rad about zero and {speed:g} rad/s (prismatic: "
        f"±{standin['prismatic'][0]:g} m, {standin['prismatic'][1]:g} m/s), not the arm's own range."
    )


def markdown(doc: dict[str, Any]) -> str:
    """The table of every observer's thresholds, delays, false alarms and misses."""
    s = doc["settings"]
    cut = [f"{c:g}" for c in s["cutoffs"]]
    targets = list(s["impact_speeds"])
    lines = [
        f"# Collision detection on {doc['robot']} (model error ±{s['model_error'] * 100:g} %, "
        f"{s['amplitude']:g} N m on joint {s['joint']})",
        "",
        f"| observer | q̇, q̈ | threshold on joint {s['joint']} (N m) | max threshold (N m) | "
        + " | ".join(f"delay at {c} Hz (ms)" for c in cut)
        + " | "
        + " | ".join(f"impact {t:g} m/s (ms)" for t in targets)
        + " | false alarms | missed |",
        "| --- | --- | --: | --: |" + " --: |" * (len(cut) + len(targets)) + " --: | --: |",
    ]
    standin = doc.get("standin_limits")
    if standin:
        lines[1:1] = ["", standin_line(standin)]
    for name, o in doc["observers"].items():
        d = [("—" if o["delay_ms"][c] is None else f"{o['delay_ms'][c]:.1f}") for c in cut]
        # the observer's own impacts, each under its target speed's column (an identified model's loop
        # meets them elsewhere, at other speeds; a target its loop's motion gave no instant of its own: n/a)
        own = delays_by_target(o)
        at = [own.get(t, "n/a") for t in targets]
        d += [x if isinstance(x, str) else "—" if x is None else f"{x:.1f}" for x in at]
        shown = f"{name} (identified model)" if o.get("model") == "identified" else name
        lines.append(
            f"| {shown} | {o['qd_qdd']} | {o['threshold'][s['joint'] - 1]:.3g} | {max(o['threshold']):.3g} | "
            + " | ".join(d)
            + f" | {o['false_alarms']} | {o['missed']}/{o['events']} |"
        )
    lines += [
        "",
        impacts_line(doc["impacts"]),
        "",
        "Birjandi & Haddadin (Panda, real robot, IMU-fused q̇, q̈ on one joint): momentum threshold 1 N m, "
        "model-adaptive 0.1 N m, detected within ≈ 1.2 ms.",
    ]
    return "\n".join(lines + _identified_model(doc) + _loop_gains(doc) + _torque_limited(doc)) + "\n"


def _identified_model(doc: dict[str, Any]) -> list[str]:
    """What --model identified did (collide._identified_doc): the torque error before and after."""
    m = doc.get("model")
    if not m or not any(o.get("model") == "identified" for o in doc["observers"].values()):
        return []
    err = m["torque_error_rms"]
    speeds = ", ".join(speed_label(i["speed_m_s"]) for i in m["identified_impacts"])
    return [
        "",
        "The observers marked (identified model) run on the model "
        + m["non_adaptive"]
        + "; the model-adaptive ones on the drawn model. Inverse-dynamics torque error RMS on the check motion "
        "per joint, drawn → identified (N m): "
        + ", ".join(f"{a:.3g} → {b:.3g}" for a, b in zip(err["drawn"], err["identified"]))
        + f". Their impacts are placed on their own loop (tip speeds {speeds} m/s).",
    ]


def _loop_gains(doc: dict[str, Any]) -> list[str]:
    """Computed torque's gains each observer's loop ran (collide.ClosedLoop; paper_setups.LOOP_GAINS
    lowers them on a Kalman-fed loop that would keep less than a 6 dB gain margin)."""
    groups: dict[str, list[str]] = {}
    for name, o in doc["observers"].items():
        c = o["closed_loop"]
        if "kp" not in c:  # a document written before collide reported its gains
            return []
        key = "Kp " + "/".join(f"{x:.3g}" for x in c["kp"]) + ", Kd " + "/".join(f"{x:.3g}" for x in c["kd"])
        groups.setdefault(key, []).append(name)
    if len(groups) == 1:
        return ["", f"Computed torque: {next(iter(groups))} (per joint) for every observer."]
    return [
        "",
        "Computed torque (per joint; on the Kalman estimate lowered to keep a 6 dB gain margin): "
        + "; ".join(f"{key} for {', '.join(names)}" for key, names in groups.items())
        + ".",
    ]


def _torque_limited(doc: dict[str, Any]) -> list[str]:
    """A warning for the observers whose closed loop hit its torque limit on the design run
    (collide.ClosedLoop): their figures measure the controller, not the observer."""
    hit = {name: o["closed_loop"] for name, o in doc["observers"].items() if o["closed_loop"]["torque_limited"]}
    if not hit:
        return []
    return [
        "",
        "**Closed loop at its torque limit** on the collision-free design run (the controller's command "
        "saturated: with this model error the loop left its linear range, e.g. an oscillation; the "
        "thresholds and delays of these rows measure that, not the observer; `manipgen study` leaves "
        "such runs out of its rates): "
        + "; ".join(
            f"{name} ({c['at_torque_limit'] * 100:.3g} % of the samples, tracking error up to "
            f"{max(c['max_tracking_error']):.3g})"
            for name, c in hit.items()
        )
        + ".",
    ]


def write(result: CollideResult, out: Path) -> list[Path]:
    """collide.{json,md,png} and collide_impacts.png in ``out``; the paths written."""
    doc, arrays = result.doc, result.arrays
    write_file(out / "collide.json", json.dumps(finite(doc), indent=1, allow_nan=False) + "\n")  # inf: null
    write_file(out / "collide.md", markdown(doc))
    impacts = plots.collision_impacts(
        arrays["free_ratio"],
        arrays["ts"],
        doc["settings"]["skip"],
        list(arrays["impacts"].values()),
        out / "collide_impacts.png",
        "Hunt-Crossley contact, (Jᵀ)⁺ τ_ext",
        doc["robot"],
    )
    return [
        out / "collide.json",
        out / "collide.md",
        plots.collision(arrays, out / "collide.png", doc["robot"]),
        impacts,
    ]

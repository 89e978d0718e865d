"""`manipgen thresholds`' report: the JSON document, the Markdown table and the residual plot of
thresholds designed on a collision-free run (host_tools.studies.thresholds.design_on)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from host_tools.reports import plots
from host_tools.studies.design_model import ModelChoice
from host_tools.studies.thresholds import Check, Designed


def shape(margin: float | str, static: bool) -> str:
    """The threshold's formula in words (``margin``: the factor, or its words)."""
    margin = f"{margin:.3g}" if isinstance(margin, float) else margin
    if static:
        return f"threshold = {margin} x max |r|"
    return f"threshold = {margin} x (the least-mean envelope of |r|: c0 + kv |qd| + ka |qdd| + ks exp(-|qd|/vs))"


def plot(result: Designed, path: Path) -> Path:
    """r(t) per joint with the thresholds (and the first other run's, if checked)."""
    s = result.settings
    other = (Path(result.others[0].checks.source).name, result.checks[0]) if result.checks else None
    return plots.threshold_residuals(
        result.design,
        result.sample_period,
        path,
        f"{result.robot} ({result.pipeline})\nr on {', '.join(Path(r.checks.source).name for r in result.data)}, "
        f"{shape(_factor(result), s.static)}"
        + (f" + {s.floor:g}" if s.floor else "")
        + (f"; blue: {other[0]}" if other is not None else ""),
        other,
    )


def _factor(result: Designed) -> float | str:
    """The margin, or "margin_j" where the joints' differ."""
    m = result.design.margins
    return float(m[0]) if np.all(m == m[0]) else "margin_j"


def designed_for(result: Designed) -> dict[str, object]:
    """What the margin was designed for: the event, its probability and the motion it refers to.

    The worst-block rule fits no tail: the worst of U held-out block maxima (exchangeable blocks)
    is exceeded by a new block's with probability 1 / (U + 1) (the rank of one more draw among
    U + 1), and the margin puts that worst at ``target`` -- a false alarm needs 1 / target times it,
    a probability the rule does not model. The extreme-value rule states its probability per
    ``horizon`` of motion (extreme_value_margins)."""
    d = result.design
    runs = len(result.data)
    units = int(d.held_out.shape[0])
    if d.margin_given:
        return {"method": "given (--margin)", "event": None, "probability": None, "per_s": None}
    if d.exceedance is None:
        return {
            "method": "worst held-out block"
            + (f" ({runs} runs, each held out in turn, on {units // runs} blocks each)" if runs > 1 else ""),
            "event": f"a block's max |r| / threshold above the worst held-out one ({d.target:g})",
            "probability": 1.0 / (units + 1),
            "per_s": d.block_seconds,
            "false_alarm_probability_modelled": False,
        }
    return {
        "method": "extreme-value (Gumbel) fit per joint of the held-out block maxima"
        + (f" ({runs} runs, each held out in turn)" if runs > 1 else ""),
        "event": "some joint's max |r| / threshold reaches "
        + ("1 (a false alarm)" if d.target == 1 else f"{d.target:g}"),
        "probability": d.exceedance,
        "per_s": d.horizon,
        "false_alarm_probability_modelled": d.target == 1,
    }


def _check_doc(result: Designed) -> dict[str, object]:
    """One checked run's figures, or the worst over several (their own under ``runs``)."""
    runs = [
        {
            "data": r.checks.source,
            "max_residual": c.max_residual.tolist(),
            "ratio": c.ratio.tolist(),
            "false_alarm_samples": c.false_alarm_samples.tolist(),
            "threshold_mean": c.threshold_mean.tolist(),
        }
        for r, c in zip(result.others, result.checks)
    ]
    if len(runs) == 1:
        return runs[0]
    cs = result.checks
    return {
        "data": [r["data"] for r in runs],
        "max_residual": np.max([c.max_residual for c in cs], axis=0).tolist(),
        "ratio": np.max([c.ratio for c in cs], axis=0).tolist(),
        "false_alarm_samples": np.sum([c.false_alarm_samples for c in cs], axis=0).tolist(),
        "threshold_mean": np.mean([c.threshold_mean for c in cs], axis=0).tolist(),
        "runs": runs,
    }


def document(result: Designed, model: ModelChoice | None = None) -> dict[str, object]:
    """The JSON document; ``model``: which model it was designed with, and why."""
    design, s = result.design, result.settings
    runs = [*result.data, *result.others]
    doc: dict[str, object] = {
        "robot": result.robot,
        "pipeline": result.pipeline,
        **({"model": model.as_json()} if model is not None else {}),
        "data": [r.checks.source for r in result.data],
        "shape": "static" if s.static else "fitted",
        "margin": design.margin,
        "margins": design.margins.tolist(),
        "margin_from": {
            "derived": not design.margin_given,
            "rule": _rule(result),
            "designed_for": designed_for(result),
            "target": design.target,
            "blocks": int(design.held_out.shape[0]),
            "block_s": design.block_seconds,
            "held_out_worst": float(design.held_out.max()),
            "held_out_ratio": design.held_out.tolist(),
        },
        "skip_s": s.skip,
        # true: an observer that holds its adaptation on its thresholds, designed twice and checked with
        # them acting on the hold (the residual the written config gives); false: replayed with detection off
        "hold_acting": result.hold_acting,
        "floor": s.floor,
        # the level at rest's floor per joint: 2 |FC + FS| / target of the model it runs (coulomb_floor)
        "rest_floor": None if result.rest_floor is None else result.rest_floor.tolist(),
        "samples": design.samples,
        "flagged_left_out": design.excluded,
        "checks": [{**f, "source": r.checks.source} for r in runs for f in r.checks.as_json()],
        "acceleration": design.acceleration,
        "threshold": design.threshold.tolist(),
        "kv": design.kv.tolist(),
        "ka": design.ka.tolist(),
        "ks": design.ks.tolist(),
        "vs": design.vs.tolist(),
        "threshold_mean": design.threshold_mean.tolist(),
        "max_residual": design.max_residual.tolist(),
        "at_time_s": design.at_time.tolist(),
    }
    if result.tuned is not None:
        t = result.tuned
        doc["tuned"] = {
            t.key: t.value,
            "objective": t.objective,
            "default_objective": t.default_objective,
            "candidates": [{t.key: value, "objective": obj} for value, obj in t.table],
        }
    if result.checks:
        doc["check"] = _check_doc(result)
    return doc


def _rule(result: Designed) -> str:
    d = result.design
    if d.margin_given:
        return "given (--margin)"
    held = "each run held out in turn" if len(result.data) > 1 else "held-out blocks"
    if d.exceedance is None:
        return f"max(1, worst held-out max |r| / envelope) / target ({held})"
    return (
        f"per joint: max(1, worst held-out ratio, Gumbel level of its held-out maxima at its share of the "
        f"probability {d.exceedance:g} per {d.horizon:g} s of motion) / target ({held})"
    )


def _table(result: Designed) -> str:
    design = result.design
    check = None if not result.checks else result.checks[0] if len(result.checks) == 1 else _worst(result)
    head = "| joint | max abs(r) | at (s) | threshold (static part) | kv | ka | ks | vs | mean threshold |" + (
        " check: max abs(r) | check: ratio | check: samples above | check: mean threshold |"
        if check is not None
        else ""
    )
    lines = [head + "\n|" + " --: |" * 9 + (" --: | --: | --: | --: |" if check is not None else "")]
    for i in range(len(design.threshold)):
        row = (
            f"| {i + 1} | {design.max_residual[i]:.4g} | {design.at_time[i]:.3f} | {design.threshold[i]:.4g} | "
            f"{design.kv[i]:.4g} | {design.ka[i]:.4g} | {design.ks[i]:.4g} | {design.vs[i]:.3g} | "
            f"{design.threshold_mean[i]:.4g} |"
        )
        if check is not None:
            row += (
                f" {check.max_residual[i]:.4g} | {check.ratio[i]:.2f} | {int(check.false_alarm_samples[i])} | "
                f"{check.threshold_mean[i]:.4g} |"
            )
        lines.append(row)
    return "\n".join(lines)


def _worst(result: Designed) -> Check:
    """The worst over several checked runs, per joint (their threshold means averaged)."""
    cs = result.checks
    return replace(
        cs[0],
        max_residual=np.max([c.max_residual for c in cs], axis=0),
        false_alarm_samples=np.sum([c.false_alarm_samples for c in cs], axis=0),
        ratio=np.max([c.ratio for c in cs], axis=0),
        threshold_mean=np.mean([c.threshold_mean for c in cs], axis=0),
    )


def _designed_line(result: Designed) -> str:
    f = designed_for(result)
    if f["probability"] is None:
        return "designed for: no stated probability (the margin is given)"
    per = float(str(f["per_s"]))
    span = f"{per / 3600:g} h" if per >= 3600 else f"{per:.3g} s"
    how = str(f["method"])
    return f"designed for: {f['event']} with probability {float(str(f['probability'])):.3g} per {span} of motion " + (
        "(rank bound over exchangeable blocks; the false-alarm rate is not modelled)"
        if how.startswith("worst")
        else f"({how})"
    )


def _model_line(model: ModelChoice) -> str:
    """Which model the residual came from, the other's sum beside it."""
    other = {k: v for k, v in model.sums.items() if k != model.used}
    if model.used == "identified":
        m = model.identified
        assert m is not None
        on, held = (
            (
                f"the {m.runs} runs together",
                f"each held-out run's margin from a model identified on the other {'run' if m.runs == 2 else 'runs'}",
            )
            if m.runs > 1
            else ("the run", f"each of the {len(m.folds)} held-out blocks' margin from a model identified without it")
        )
        velocity = "recorded" if m.velocity == "recorded" else "estimated"
        what = f"model: identified on {on} (fitted with the {velocity} velocity; {held}; {m.seconds:.0f} s)"
    else:
        what = "model: the description's" + (" (--config's model.params)" if "--config" in model.note else "")
    named = {"description": "the description's model", "identified": "the identified model"}
    beside = "".join(f"; with {named[k]} the mean thresholds would sum to {v:.4g}" for k, v in other.items())
    return what + beside + (f"; {model.note}" if model.note else "") + "\n"


def text(result: Designed, written: list[tuple[str, str]], model: ModelChoice | None = None) -> str:
    """The summary, the table per joint and the other run's verdict; ``written``: (path, what);
    ``model``: which model it was designed with."""
    design, s = result.design, result.settings
    if design.margin_given:
        derived = "given (--margin)"
    elif design.exceedance is None:
        derived = (
            f"max(1, worst held-out ratio {design.held_out.max():.3f} of {design.held_out.shape[0]} blocks"
            + (f", each of {len(result.data)} runs held out in turn" if len(result.data) > 1 else "")
            + f") / target {design.target:g}"
        )
    else:
        derived = _rule(result)
    parts = [
        f"{result.robot} ({result.pipeline}), "
        + (f"{len(result.data)} runs, " if len(result.data) > 1 else "")
        + f"{design.samples} samples after {s.skip:g} s"
        + (f" ({design.excluded} flagged left out)" if design.excluded else "")
        + f"; {shape(_factor(result), s.static)} + floor {s.floor:g} (--floor)\n"
        + (
            f"margin {design.margin:.3f}"
            if isinstance(_factor(result), float)
            else "margin_j " + " ".join(f"{m:.3f}" for m in design.margins)
        )
        + f": {derived}"
        + ("" if design.acceleration or s.static else "; the estimator gives no q-ddot: ka is moot (0)")
        + f"\n{_designed_line(result)}\n"
        + ("" if model is None else _model_line(model))
        + (
            "its adaptation holds on its thresholds: designed twice, the second time (and checked) with the "
            "first thresholds acting on the hold, as the written config runs\n"
            if result.hold_acting
            else ""
        )
        + (
            "the level at rest (qd = 0) is at least 2 |FC + FS| / target per joint, the model's friction jump "
            "through zero velocity: " + " ".join(f"{v:.3g}" for v in result.rest_floor) + "\n"
            if result.rest_floor is not None and np.any(result.rest_floor > 0)
            else ""
        )
    ]
    if result.tuned is not None:
        t = result.tuned
        parts.append(
            f"tuned: {t.key} = {t.value:g} (sum_j max|r_j| / RMS(tau_j): {t.objective:.3g}, was "
            f"{t.default_objective:.3g})\n"
        )
    parts += [
        _table(result),
        "\n(N m, or N for a prismatic joint; kv per rad/s, ka per rad/s^2, vs in rad/s: the threshold along the run is "
        "threshold + kv |qd| + ka |qdd| + ks exp(-|qd| / vs))",
        f"\nsum of the mean thresholds: {design.threshold_mean.sum():.4g}",
    ]
    if len(result.checks) > 1:
        parts.append("\nthe check columns: the worst over the checked runs (the mean threshold: their average)")
    for other, c in zip(result.others, result.checks):
        alarms = int(c.false_alarm_samples.sum())
        skipped = 0 if c.left_out is None else int(np.sum(c.left_out))
        parts.append(
            f"\n{other.checks.source}: "
            + (
                f"no false alarm (worst max |r| / threshold {c.ratio.max():.3f})"
                if alarms == 0
                else f"{alarms} samples above a threshold (false alarms: lower --target, or raise --margin or --floor)"
            )
            + (
                f" on the samples kept ({skipped} samples, flagged or next to a flagged one, were left out; "
                "--keep-flagged checks them too)"
                if skipped
                else ""
            )
        )
    parts += [f"wrote {path}: {what}" for path, what in written]
    return "".join(p + "\n" for p in parts)

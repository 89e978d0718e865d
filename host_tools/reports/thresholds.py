"""`manipgen thresholds`' report: the JSON document, the Markdown table and the residual plot of
thresholds designed on a collision-free run (host_tools.studies.thresholds.design_on)."""

from __future__ import annotations

from pathlib import Path

from host_tools.reports import plots
from host_tools.studies.thresholds import Designed


def shape(margin: float, static: bool) -> str:
    """The threshold's formula in words."""
    if static:
        return f"threshold = {margin:.3g} x max |r|"
    return f"threshold = {margin:.3g} x (the least-mean envelope of |r|: c0 + kv |qd| + ka |qdd| + ks exp(-|qd|/vs))"


def plot(result: Designed, path: Path) -> Path:
    """r(t) per joint with the thresholds (and the other run's, if checked)."""
    s, other = result.settings, result.other
    return plots.threshold_residuals(
        result.design,
        result.sample_period,
        path,
        f"{result.robot} ({result.pipeline})\nr on {Path(result.data.checks.source).name}, "
        f"{shape(result.design.margin, s.static)}"
        + (f" + {s.floor:g}" if s.floor else "")
        + (f"; blue: {Path(other.checks.source).name}" if other is not None else ""),
        (Path(other.checks.source).name, result.check) if other is not None and result.check is not None else None,
    )


def document(result: Designed) -> dict[str, object]:
    """The JSON document."""
    design, s = result.design, result.settings
    runs = [result.data] + ([result.other] if result.other is not None else [])
    doc: dict[str, object] = {
        "robot": result.robot,
        "pipeline": result.pipeline,
        "shape": "static" if s.static else "fitted",
        "margin": design.margin,
        "margin_from": {
            "derived": not design.margin_given,
            "rule": "given (--margin)" if design.margin_given else "max(1, worst held-out max |r| / envelope) / target",
            "target": design.target,
            "blocks": int(design.held_out.shape[0]),
            "held_out_worst": float(design.held_out.max()),
            "held_out_ratio": design.held_out.tolist(),
        },
        "skip_s": s.skip,
        "floor": s.floor,
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
    if result.other is not None and result.check is not None:
        check = result.check
        doc["check"] = {
            "data": result.other.checks.source,
            "max_residual": check.max_residual.tolist(),
            "ratio": check.ratio.tolist(),
            "false_alarm_samples": check.false_alarm_samples.tolist(),
            "threshold_mean": check.threshold_mean.tolist(),
        }
    return doc


def _table(result: Designed) -> str:
    design, check = result.design, result.check
    head = "| joint | max abs(r) | at (s) | threshold | kv | ka | ks | vs | mean threshold |" + (
        " check: max abs(r) | ratio | samples above | mean threshold |" if check is not None else ""
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


def text(result: Designed, written: list[tuple[str, str]]) -> str:
    """The summary, the table per joint and the other run's verdict; ``written``: (path, what)."""
    design, s = result.design, result.settings
    derived = (
        "given (--margin)"
        if design.margin_given
        else f"max(1, worst held-out ratio {design.held_out.max():.3f} of {design.held_out.shape[0]} blocks) / "
        f"target {design.target:g}"
    )
    parts = [
        f"{result.robot} ({result.pipeline}), {design.samples} samples after {s.skip:g} s"
        + (f" ({design.excluded} flagged left out)" if design.excluded else "")
        + f"; {shape(design.margin, s.static)} + {s.floor:g}\nmargin {design.margin:.3f}: {derived}"
        + ("" if design.acceleration or s.static else "; the estimator gives no q-ddot: ka is moot (0)")
        + "\n"
    ]
    if result.tuned is not None:
        t = result.tuned
        parts.append(
            f"tuned: {t.key} = {t.value:g} (sum_j max|r_j| / RMS(tau_j): {t.objective:.3g}, was "
            f"{t.default_objective:.3g})\n"
        )
    parts += [_table(result), f"\nsum of the mean thresholds: {design.threshold_mean.sum():.4g}"]
    if result.other is not None:
        alarms = result.false_alarms
        parts.append(
            f"\n{result.other.checks.source}: "
            + (
                "no false alarm"
                if alarms == 0
                else f"{alarms} samples above a threshold (false alarms: lower --target, or raise --margin or --floor)"
            )
        )
    parts += [f"wrote {path}: {what}" for path, what in written]
    return "".join(p + "\n" for p in parts)

"""The `manipgen` console entry point: codegen's commands plus those that run the generated C."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from codegen.cli import add_force_options, add_robot_arguments, build_parser, run
from codegen.outputs import write_file

if TYPE_CHECKING:
    from rich.console import Console


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import demo

    return demo(args.robot, out=args.out, states=args.states)


def cmd_evaluate(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .eval_reports import setups_figure, table
    from .evaluate import ESTIMATORS, Setup, evaluate

    console = Console(stderr=True, soft_wrap=True)
    unknown = [e for e in args.estimators if e not in ESTIMATORS]
    if unknown:
        console.print(
            f"manipgen: error: unknown estimator(s) {', '.join(unknown)}; choose from {', '.join(ESTIMATORS)}"
        )
        return 2
    if args.log:
        return _evaluate_logs(args, console)
    if args.gains not in ("default", "paper"):
        console.print("manipgen: error: --gains is default or paper (a tuned folder goes with --log)")
        return 2
    pairs = [(args.resolution_mdeg, args.rate_hz)]
    if args.setups:
        try:
            pairs = [(float(r), float(f)) for r, f in (item.split("@") for item in args.setups)]
        except ValueError:
            console.print(f"manipgen: error: --setups takes RESOLUTION_MDEG@RATE_HZ items, got {args.setups}")
            return 2
    setups = [
        Setup(
            robot=args.robot,
            resolution_mdeg=r,
            rate_hz=f,
            faults=args.faults,
            seed=args.seed,
            tune=args.tune,
            generations=args.generations,
            model_error=args.model_error,
            gains=args.gains,
        )
        for r, f in pairs
    ]
    problems = [p for s in setups for p in s.problems()]
    if problems:
        console.print("manipgen: error: " + "; ".join(dict.fromkeys(problems)))
        return 2
    docs = []
    for setup in setups:
        resolution, rate = setup.resolution_mdeg, setup.rate_hz
        out = None if not args.out else Path(args.out) / (f"{resolution:g}mdeg_{rate:g}Hz" if args.setups else "")
        columns = (
            TextColumn("{task.description:>8}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[info]}"),
        )
        with Progress(*columns, console=console, transient=not console.is_terminal) as bar:
            console.print(f"{setup.robot}: {resolution:g} mdeg, {rate:g} Hz")
            tasks = {name: bar.add_task(name, total=None, info="waiting") for name in args.estimators}

            def progress(name: str, done: int, total: int, info: str) -> None:
                bar.update(tasks[name], completed=done, total=total, info=info)  # noqa: B023 (called within this iteration)

            doc = evaluate(setup, tuple(args.estimators), out, progress=progress)
        docs.append(doc)
        if not args.json:
            print(
                table(doc)
                + f"\n{doc['seconds']:.0f} s"
                + (
                    f"; reports in {out}/ (evaluation.md/.csv/.json/.png, fig5/7/8 PNGs, <estimator>.config.json)"
                    if out
                    else ""
                )
            )
    if args.json:
        print(json.dumps(docs[0] if len(docs) == 1 else docs, indent=1))
    if args.out and len(docs) > 1:
        setups_figure(docs, Path(args.out))
    return 0


def cmd_excite(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from codegen.description import load_robot

    from .excite import ExciteSettings, design, write_outputs

    console = Console(stderr=True, soft_wrap=True)
    settings = ExciteSettings(
        harmonics=args.harmonics,
        base_frequency=args.base_frequency,
        objective=args.objective,
        starts=args.starts,
        seed=args.seed,
        max_iter=args.max_iter,
        torque_limits=args.torque_limits,
        grid=args.grid,
    )
    problems = settings.problems()
    if problems:
        console.print("manipgen: error: " + "; ".join(problems))
        return 2
    robot = load_robot(args.robot)
    ts = args.sample_period or robot.sample_period
    try:
        with Progress(
            TextColumn("random starts"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[info]}"),
            console=console,
            transient=not console.is_terminal,
        ) as bar:
            task = bar.add_task("starts", total=settings.starts, info="")
            result = design(
                robot,
                settings,
                progress=lambda k, n, best: bar.update(task, completed=k, info=f"best {settings.objective} {best:.4g}"),
                stage=args.stage,
            )
        written = write_outputs(result, robot, ts, Path(args.out)) if args.out else []
    except (ValueError, RuntimeError, OSError) as exc:
        console.print(f"manipgen: error: {exc}")
        return 2
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
    else:
        print(
            f"{robot.name}: cond({'Y_b' if args.stage == 'load' else 'Y_m'}) = {result.cond:.1f} over one period at "
            f"{settings.report_rate:g} Hz "
            f"({settings.objective} objective {result.objective:.4g}; {len(result.starts)} starts, "
            f"{result.seconds:.0f} s)" + (f"\nwrote {', '.join(str(p) for p in written)}" if written else "")
        )
    return 0


def cmd_identify(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from rich.console import Console

    from .csvdata import CsvError, Samples, read_samples
    from .excite import Excitation
    from .ident_pipeline import COULOMB_SCALE_GRID, IdentSettings, fits_coulomb_scales
    from .ident_report import Synthetic, run, synthetic, table, write
    from .logs import Log, LogError

    console = Console(stderr=True, soft_wrap=True)
    if args.synthetic == bool(args.data):
        console.print(
            "manipgen: error: give a DATA log (an excitation run with --excitation, or a recorded run) "
            "or --synthetic, not both or neither"
        )
        return 2
    if args.method:
        if args.fit_coulomb_scale or args.min_speed is not None:
            console.print(
                "manipgen: error: --fit-coulomb-scale and --min-speed belong to the inverse-dynamics "
                "identification (without --method)"
            )
            return 2
        return _identify_closed_loop(args, console)
    fit_scales = args.fit_coulomb_scale
    if fit_scales is None:
        from codegen.description import load_robot
        from codegen.errors import DescriptionError

        try:
            fit_scales = fits_coulomb_scales(load_robot(args.robot), recorded=not (args.excitation or args.synthetic))
        except DescriptionError as err:
            console.print(f"manipgen: error: {err}")
            return 2
    settings = IdentSettings(
        band=args.band,
        min_abs=args.min_abs,
        max_rsd=args.max_rsd,
        weighted=not args.ols,
        cutoff_q=args.cutoff_q,
        # a fitted tanh scale needs the samples near rest, where the scales differ
        min_speed=(0.0 if fit_scales else IdentSettings.min_speed) if args.min_speed is None else args.min_speed,
        coulomb_scales=COULOMB_SCALE_GRID if fit_scales else (),
    )
    if not (
        settings.band > 0
        and settings.min_abs >= 0
        and settings.max_rsd > 0
        and settings.min_speed >= 0
        and settings.cutoff_q > 0
    ):
        console.print(
            "manipgen: error: --band, --cutoff-q and --max-rsd must be positive, --min-abs and --min-speed >= 0"
        )
        return 2

    def data(path: str) -> Log | Samples:
        from codegen.description import load_robot

        from .mat_logs import load_log

        robot = load_robot(args.robot)
        return read_samples(path, robot.dof) if path.lower().endswith(".csv") else load_log(path, robot)

    try:
        with console.status("identifying ...") as status:
            if args.synthetic:
                doc, arrays, _ = synthetic(
                    args.robot, Synthetic(seed=args.seed), settings, stage=lambda s: status.update(s)
                )
            else:
                # without an excitation: a recorded non-periodic run (e.g. seed 000's LWA-4P runs)
                exc = Excitation.load(args.excitation) if args.excitation else None
                validate = data(args.validate) if args.validate else None
                doc, arrays = run(
                    args.robot, data(args.data), exc, validate, settings, stage=lambda s: status.update(s)
                )
        written = write(doc, arrays, args.robot, Path(args.out)) if args.out else []
    except (ValueError, LogError, CsvError, OSError, RuntimeError) as exc_:
        console.print(f"manipgen: error: {exc_}")
        return 2
    for warning in doc.get("warnings", []):
        console.print(f"manipgen: warning: {warning}")
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        print(
            table(doc)
            + f"\n{doc['seconds']:.0f} s"
            + (f"; wrote {', '.join(str(p) for p in written)}" if written else "")
        )
    return 0


def _identify_closed_loop(args: argparse.Namespace, out: Console) -> int:
    """identify --method ...: output-error identification of a closed-loop run (seed 002)."""
    import json
    from pathlib import Path

    from codegen.errors import DescriptionError
    from codegen.yamlio import load_yaml

    from .logs import Log, LogError
    from .oe_report import (
        OESynthetic,
        identify_closed_loop,
        loop_for,
        methods_of,
        oe_data,
        single,
        synthetic_run,
        tables,
        write,
    )
    from .outputerror import OESettings

    try:
        methods = methods_of(args.method)
        if args.max_iter < 1:
            raise ValueError("--max-iter must be >= 1")
        for flag, value in (("--excitation", args.excitation), ("--validate", args.validate)):
            if value:
                raise ValueError(f"{flag} belongs to the periodic identification (without --method)")
        if args.synthetic and args.gains:
            raise ValueError("--gains describes the controller of a DATA log; --synthetic sets its own PD")
        settings = OESettings(sensitivities=args.sensitivities, max_iterations=args.max_iter, decimate=args.decimate)
        with out.status("identifying ...") as status:
            if args.synthetic:
                opts = OESynthetic(seed=args.seed)
                status.update("simulating the closed-loop run (loopback)")
                log, loop = synthetic_run(args.robot, opts)
                from codegen.description import load_robot

                from .identify import model

                truth = model(load_robot(args.robot)).true_base()
                init_error, source = opts.init_error, "synthetic run"
            else:
                if str(args.data).lower().endswith(".csv"):
                    raise ValueError(
                        f"{args.data}: output-error methods need the reference trajectory the "
                        "controller tracked: give a log (.npz) with q_des and qd_des"
                    )
                log = Log.load(args.data)
                gains = load_yaml(args.gains).data if args.gains else None
                if args.gains and not isinstance(gains, dict):
                    raise ValueError(
                        f"{args.gains}: expected a mapping of kp, kd, ki, i_max, tau_max, drive_gain, "
                        "gravity_compensation (docs/identification.md)"
                    )
                try:
                    loop = loop_for(args.robot, gains)
                except ValueError as err:
                    raise ValueError(f"{args.gains}: {err}" if args.gains else str(err)) from None
                truth, init_error, source = None, 0.0, str(args.data)
            try:
                doc, results = identify_closed_loop(
                    args.robot,
                    oe_data(args.robot, log, loop.drive_gain, source),
                    loop,
                    methods,
                    settings,
                    args.init,
                    init_error,
                    args.parameters,
                    args.seed,
                    truth,
                    stage=lambda s: status.update(s),
                )
            except ValueError as err:
                text = str(err)
                raise ValueError(text if text.startswith(source) else f"{source}: {text}") from None
        if args.synthetic:
            doc["synthetic"] = vars(opts)
        written = write(doc, results, Path(args.out)) if args.out else []
    except (ValueError, LogError, OSError, RuntimeError, DescriptionError) as exc_:
        out.print(f"manipgen: error: {exc_}")
        return 2
    for w in doc["warnings"]:
        out.print(f"manipgen: warning: {w}")
    if args.json:
        print(json.dumps(single(doc, methods[0]) if len(methods) == 1 else doc, indent=1, allow_nan=False))
    else:
        print(
            tables(doc)
            + f"\n{doc['seconds']:.1f} s"
            + (f"; wrote {', '.join(str(p) for p in written)}" if written else "")
        )
    return 0


def _evaluate_logs(args: argparse.Namespace, console: Console) -> int:
    """manipgen evaluate ROBOT --log RUN [RUN ...]: the estimators over recorded encoder streams."""
    import json
    from pathlib import Path

    from codegen.description import load_robot
    from codegen.errors import DescriptionError

    from .log_estimation import figure, report, table
    from .logs import LogError
    from .mat_logs import load_log
    from .rt import ConfigError

    gains = tuple(args.gains.split(","))
    for g in gains:
        if g not in ("default", "paper") and not (Path(g) / "evaluation.json").is_file():
            console.print(
                f"manipgen: error: --gains {g}: not default, paper nor a folder of `manipgen evaluate "
                "--tune --out` (evaluation.json)"
            )
            return 2
    try:
        robot = load_robot(args.robot)
        runs = {Path(p).stem: load_log(p, robot) for p in args.log}
        with console.status("running the estimators over the logs ..."):
            doc, estimates = report(runs, gains, tuple(args.estimators))
        written = []
        if args.out:
            out = Path(args.out)
            write_file(out / "real_estimation.json", json.dumps(doc, indent=1) + "\n")
            write_file(out / "real_estimation.md", table(doc) + "\n")
            written = ["real_estimation.json", "real_estimation.md"]
            for run, log in runs.items():
                figure(log, estimates[run][gains[-1]], out / f"real_estimation_{run}.png")
                written.append(f"real_estimation_{run}.png")
    except (ValueError, LogError, ConfigError, DescriptionError, OSError) as exc:
        console.print(f"manipgen: error: {exc}")
        return 2
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        print(table(doc) + (f"\nwrote {', '.join(written)} in {args.out}/" if written else ""))
    return 0


def cmd_import_log(args: argparse.Namespace) -> int:
    import sys

    import numpy as np

    from codegen.description import load_robot
    from codegen.errors import DescriptionError

    from .logs import LogError
    from .mat_logs import import_mat

    try:
        robot = load_robot(args.robot)
        log = import_mat(args.file, robot)
        log.save(args.out)
    except (ValueError, LogError, DescriptionError, OSError) as exc:
        print(f"manipgen: error: {exc}", file=sys.stderr)
        return 2
    rms = np.sqrt(np.mean(log.tau**2, axis=0))
    saturated = np.sum(log.extra["tau_saturated"], axis=0)
    print(
        f"{args.file} -> {args.out}: {robot.name}, {len(log.time)} samples every {log.sample_period:g} s "
        f"({log.time[-1] - log.time[0]:.1f} s; the current leads by 2 samples, so it starts at the third)"
    )
    print("joint       " + "".join(f"{j.name:>10}" for j in robot.joints))
    print("tau RMS N m " + "".join(f"{v:>10.3f}" for v in rms))
    print("saturated   " + "".join(f"{int(v):>10d}" for v in saturated))
    return 0


def cmd_thresholds(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from rich.console import Console

    from codegen.blocks.options import OptionError
    from codegen.description import load_robot
    from codegen.errors import DescriptionError

    from .logs import LogError
    from .mat_logs import load_log
    from .rt import ConfigError, load_rt
    from .thresholds import (
        Check,
        Tuned,
        check_thresholds,
        design_thresholds,
        plot_residuals,
        require_tunable,
        tune_adaptive,
    )

    console = Console(stderr=True, soft_wrap=True)
    if not (args.margin >= 1 and args.floor >= 0 and args.skip >= 0):
        console.print("manipgen: error: --margin must be >= 1, --floor and --skip >= 0")
        return 2
    if args.plot and not args.plot.lower().endswith(".png"):
        console.print(f"manipgen: error: --plot {args.plot}: the residual plot is a PNG (name it .png)")
        return 2
    tuned: Tuned | None = None
    check: Check | None = None
    try:
        rt = load_rt(args.robot, estimator=args.estimator, observer=args.observer)
        if args.tune:
            require_tunable(rt)
        if args.config:
            rt.config.load(args.config)
        robot = load_robot(args.robot)
        log = load_log(args.data, robot)
        other = load_log(args.check, robot) if args.check else None
        try:
            if args.tune:
                with console.status("tuning the adaptive observer's damping on the run ..."):
                    tuned = tune_adaptive(rt, log, args.skip)
            design = design_thresholds(rt, log, args.margin, args.skip, args.floor)
        except ValueError as err:
            raise ValueError(f"{args.data}: {err}") from None
        if other is not None:
            try:
                check = check_thresholds(rt, other, design.threshold, args.skip)
            except ValueError as err:
                raise ValueError(f"{args.check}: {err}") from None
        rt.config["det.threshold"] = design.threshold
        if args.plot:
            plot_residuals(
                design,
                rt.sample_period,
                Path(args.plot),
                f"{rt.name} ({rt.label})\nr on {Path(args.data).name}, thresholds = {args.margin:g} x max |r|"
                + (f" + {args.floor:g}" if args.floor else "")
                + (f"; blue: {Path(args.check).name}" if args.check else ""),
                (Path(args.check).name, check) if check is not None else None,
            )
        if args.out:
            rt.config.save(args.out)
    except (ValueError, LogError, ConfigError, OptionError, DescriptionError, OSError) as exc:
        console.print(f"manipgen: error: {exc}")
        return 2
    doc: dict[str, object] = {
        "robot": rt.name,
        "pipeline": rt.label,
        "margin": args.margin,
        "skip_s": args.skip,
        "floor": args.floor,
        "samples": design.samples,
        "threshold": design.threshold.tolist(),
        "max_residual": design.max_residual.tolist(),
        "at_time_s": design.at_time.tolist(),
    }
    if tuned is not None:
        doc["tuned"] = {
            "obs.lam": tuned.lam,
            "objective": tuned.objective,
            "default_objective": tuned.default_objective,
            "candidates": [{"obs.lam": lam, "objective": obj} for lam, obj in tuned.table],
        }
    if check is not None:
        doc["check"] = {
            "data": args.check,
            "max_residual": check.max_residual.tolist(),
            "ratio": check.ratio.tolist(),
            "false_alarm_samples": check.false_alarm_samples.tolist(),
        }
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    print(
        f"{rt.name} ({rt.label}), {design.samples} samples after {args.skip:g} s; threshold = "
        f"{args.margin:g} x max |r| + {args.floor:g}\n"
    )
    if tuned is not None:
        print(
            f"tuned: obs.lam = {tuned.lam:g} (sum_j max|r_j| / RMS(tau_j): {tuned.objective:.3g}, was "
            f"{tuned.default_objective:.3g})\n"
        )
    head = "| joint | max abs(r) | at (s) | threshold |" + (
        " check: max abs(r) | ratio | samples above |" if check is not None else ""
    )
    print(head + "\n| --: | --: | --: | --: |" + (" --: | --: | --: |" if check is not None else ""))
    for i, (m, t, th) in enumerate(zip(design.max_residual, design.at_time, design.threshold)):
        row = f"| {i + 1} | {m:.4g} | {t:.3f} | {th:.4g} |"
        if check is not None:
            row += f" {check.max_residual[i]:.4g} | {check.ratio[i]:.2f} | {int(check.false_alarm_samples[i])} |"
        print(row)
    if check is not None:
        alarms = int(check.false_alarm_samples.sum())
        print(
            f"\n{args.check}: "
            + (
                "no false alarm"
                if alarms == 0
                else f"{alarms} samples above a threshold (false alarms: raise --margin or --floor)"
            )
        )
    for path, what in (
        (args.out, "config (det.threshold set; load it with rt.config.load)"),
        (args.plot, "residual plot"),
    ):
        if path:
            print(f"wrote {path}: {what}")
    return 0


def cmd_collide(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    import numpy as np
    from rich.console import Console

    from codegen.blocks.options import OptionError
    from codegen.errors import DescriptionError

    from .collide import CollideSettings, scenario, table, write

    console = Console(stderr=True, soft_wrap=True)
    if not (args.amplitude > 0 and np.isfinite(args.amplitude) and args.seed >= 0):
        console.print("manipgen: error: --amplitude must be a positive number of N m, --seed >= 0")
        return 2
    settings = CollideSettings(
        model_error=args.model_error,
        amplitude=args.amplitude,
        joint=args.joint,
        seed=args.seed,
        observers=tuple(args.observers),
    )
    try:
        with console.status("collision scenario ...") as status:
            doc, arrays = scenario(args.robot, settings, progress=lambda s: status.update(s))
        written = write(doc, arrays, Path(args.out)) if args.out else []
    except (ValueError, OptionError, DescriptionError, OSError, RuntimeError) as exc:
        console.print(f"manipgen: error: {exc}")
        return 2
    if args.json:
        print(json.dumps(doc, indent=1, allow_nan=False))
    else:
        print(
            table(doc)
            + f"\n{doc['seconds']:.0f} s"
            + (f"; wrote {', '.join(str(p) for p in written)}" if written else "")
        )
    return 0


def cmd_elastic(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from rich.console import Console

    from codegen.blocks.options import OptionError
    from codegen.errors import DescriptionError

    console = Console(stderr=True, soft_wrap=True)
    out = Path(args.out) if args.out else None
    if args.action == "identify":
        given = [args.actuator, args.actuator_excitation, args.load, args.load_excitation]
        problem = None
        if any(given) and not all(given):
            problem = "recorded runs need all four of --actuator, --actuator-excitation, --load, --load-excitation"
        elif (args.validate or args.current or args.config or args.motor_offsets) and not all(given):
            problem = "--validate, --current, --config and --motor-offsets go with recorded runs (--actuator ...)"
        elif not (args.periods >= 2 and args.noise >= 0 and args.starts >= 1 and args.seed >= 0):
            problem = "--periods must be >= 2, --noise >= 0, --starts >= 1, --seed >= 0"
        if problem:
            console.print(f"manipgen: error: {problem}")
            return 2
    try:
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
        if args.action == "identify":
            from .elastic_ident import (
                ElasticIdentSettings,
                StudySettings,
                identify_logs,
                markdown,
                markdown_logs,
                study,
            )
            from .excite import Excitation
            from .logs import Log, LogError

            try:
                if args.actuator:
                    with console.status("two-stage identification from the logs ..."):
                        doc = identify_logs(
                            args.robot,
                            (Log.load(args.actuator), Excitation.load(args.actuator_excitation)),
                            (Log.load(args.load), Excitation.load(args.load_excitation)),
                            Log.load(args.validate) if args.validate else None,
                            args.current,
                            ElasticIdentSettings(motor_offsets=args.motor_offsets),
                            args.config,
                        )
                    text = markdown_logs(doc)
                else:
                    with console.status("two-stage identification ...") as status:
                        doc = study(
                            args.robot,
                            StudySettings(
                                periods=args.periods, current_noise=args.noise, starts=args.starts, seed=args.seed
                            ),
                            progress=lambda s: status.update(s),
                        )
                    text = markdown(doc)
            except LogError as exc:
                raise ValueError(str(exc)) from None
            if out is not None:
                write_file(out / "elastic_identification.json", json.dumps(doc, indent=1, allow_nan=False) + "\n")
                write_file(out / "elastic_identification.md", text)
        else:
            from .elastic_collision import ScenarioSettings, figure, scenario

            s = ScenarioSettings(threshold=args.threshold, k_r=args.k_r)
            with console.status("seed 003 §5.3 collision scenario ..."):
                doc = scenario(args.robot, s)
            if out is not None:
                figure(doc, s.joint, out / "elastic_collision.png")
            doc.pop("traces")
            text = json.dumps(doc, indent=1)
            if out is not None:
                write_file(out / "elastic_collision.json", text + "\n")
        shown = json.dumps(doc, indent=1, allow_nan=False) if args.json else text
    except (ValueError, OptionError, DescriptionError, OSError, RuntimeError) as exc:
        console.print(f"manipgen: error: {exc}")
        return 2
    print(shown)
    return 0


def cmd_target(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from rich.console import Console

    from codegen.blocks.options import OptionError
    from codegen.errors import DescriptionError

    from . import target as tg
    from .logs import LogError
    from .rt import ConfigError, load_rt

    console = Console(stderr=True, soft_wrap=True)
    if args.cpu not in tg.CPUS:
        console.print(f"manipgen: error: --cpu must be one of {', '.join(tg.CPUS)}, got {args.cpu!r}")
        return 2
    options = {"estimator": args.estimator, "observer": args.observer, "controller": args.controller}
    try:
        rt = load_rt(args.robot, precision=args.precision, **options)
        out = Path(args.out) if args.out else tg.default_out(rt.name, args.cpu, args.precision)
        with console.status(f"cross-compiling {rt.name} for {args.cpu} ({args.precision}) ...") as status:
            b = tg.build(rt, args.cpu, out)
            if args.action == "build":
                console.print(f"built {b.lib} and {b.elf}")
                return 0
            status.update("recording the run to replay ...")
            host = load_rt(args.robot, precision="double", **options)
            inputs, source = tg.recorded_inputs(
                args.robot,
                rt,
                host,
                Path(args.input) if args.input else None,
                Path(args.config) if args.config else None,
                out,
            )
            status.update(f"{len(inputs)} samples through {rt.name}_rt_step in QEMU ({args.cpu}) ...")
            run = tg.run_firmware(b, rt, rt.config_bytes(), inputs, timeout=args.timeout)
            status.update("comparing with the host build, footprint ...")
            doc = tg.report(b, rt, inputs, run)
    except (ValueError, LogError, ConfigError, OptionError, DescriptionError, OSError, tg.TargetError) as exc:
        console.print(f"manipgen: error: {exc}")
        return 2
    doc["input"] = source
    text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
    write_file(out / "target.json", text)
    write_file(out / "target.md", tg.table(doc))
    if args.json:
        print(text, end="")
    else:
        print(tg.table(doc) + f"\ninput: {source}\nwrote {out / 'target.json'}, {out / 'target.md'}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser, sub = build_parser()
    d = sub.add_parser("demo", help="generate, build (make) and check a robot's C end to end")
    add_robot_arguments(d)
    d.add_argument("--out", default="out", help="folder for the generated C and the build")
    d.add_argument("--states", type=int, default=1000, help="random states for the numeric check")
    d.set_defaults(handler=cmd_demo)
    e = sub.add_parser("evaluate", help="velocity estimators in the closed loop (seed 000 §IV), optionally GA-tuned")
    e.add_argument("robot", help="bundled name or a .yaml path (default trajectory: seed 000's for schunk_lwa4p)")
    e.add_argument("--resolution-mdeg", type=float, default=10.0, help="encoder resolution, millidegrees per count")
    e.add_argument("--rate-hz", type=float, default=125.0, help="controller sample rate")
    e.add_argument(
        "--setups",
        nargs="+",
        metavar="MDEG@HZ",
        help="several set-ups in one go, e.g. 10@125 2@125 1@250 (one sub-folder each + fig9_setups.png; "
        "replaces --resolution-mdeg/--rate-hz; --json then prints a list)",
    )
    e.add_argument("--faults", type=float, default=0.1, help="fraction of lost samples on the last axis (fault case)")
    e.add_argument("--tune", action="store_true", help="GA-tune the observers (Table 3), grid-search the filters")
    e.add_argument("--generations", type=int, default=20, help="GA generations (seed 000: 20)")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument(
        "--model-error",
        type=float,
        default=0.0,
        help="simulated robot's parameters = the model's x (1 + this): model-based observers feel it",
    )
    e.add_argument("--estimators", nargs="+", default=["findiff", "movav", "lsf", "kalman", "linhg", "nlhg", "slimod"])
    e.add_argument(
        "--gains",
        default="default",
        help="default, or paper: seed 000's tuned gains (Tables 4, 7, 8; schunk_lwa4p at 10@125, 2@125, "
        "1@250); with --log also the folder of a `--tune --out` run, and several comma-separated",
    )
    e.add_argument(
        "--log",
        nargs="+",
        metavar="RUN",
        help="recorded runs (.npz logs or seed 000 .mat runs): run the estimators over their encoder "
        "streams, ISE against seed 000's offline ground truth (instead of the simulation)",
    )
    e.add_argument("--json", action="store_true", help="print the JSON document instead of the table")
    e.add_argument("--out", help="folder for evaluation.md/.csv/.json/.png")
    e.set_defaults(handler=cmd_evaluate)
    x = sub.add_parser("excite", help="optimal Fourier excitation for identification (seed 004 §II-B)")
    x.add_argument("robot", help="bundled name or a .yaml path (needs q and qd limits on every joint)")
    x.add_argument("--harmonics", type=int, default=5, help="L, harmonics per joint (seed 004: 5)")
    x.add_argument("--base-frequency", type=float, default=0.05, help="f_f in Hz; the period is 1/f_f (seed 004: 0.05)")
    x.add_argument(
        "--objective",
        choices=("cond", "logdet"),
        default="cond",
        help="cond(Y_b) or -log det(Y_b^T Y_b) (D-optimality)",
    )
    x.add_argument("--starts", type=int, default=4, help="random starts of IPOPT")
    x.add_argument("--max-iter", type=int, default=300, help="IPOPT iterations per start")
    x.add_argument("--grid", type=int, default=100, help="samples per period in the objective")
    x.add_argument("--seed", type=int, default=0)
    x.add_argument("--torque-limits", action="store_true", help="keep |tau| within the joints' torque limits too")
    x.add_argument("--sample-period", type=float, help="s, of the generated C (default: the robot's)")
    x.add_argument(
        "--stage",
        choices=("load", "actuator"),
        default="load",
        help="the regressor to excite: the links' base regressor, or an elastic arm's actuators "
        "(seed 003 eq. 4.4; manipgen elastic identify --actuator)",
    )
    x.add_argument("--json", action="store_true", help="print the design as JSON")
    x.add_argument("--out", help="folder for excitation.json/.png and <robot>_excitation.{h,c}")
    x.set_defaults(handler=cmd_excite)
    d = sub.add_parser(
        "identify", help="base, essential and physical parameters from an excitation log or a recorded run (seed 004)"
    )
    d.add_argument("robot", help="bundled name or a .yaml path")
    d.add_argument(
        "data",
        nargs="?",
        help="excitation run: a log (.npz, docs/realtime.md), a CSV "
        "(time s, q1..qn rad, tau1..taun N m; docs/identification.md) or a seed 000 .mat run",
    )
    d.add_argument(
        "--excitation",
        help="the excitation.json the log ran (manipgen excite --out); without it "
        "DATA is a non-periodic recorded run (q low-passed at --cutoff-q, validated on raw torque)",
    )
    d.add_argument(
        "--cutoff-q",
        type=float,
        default=10.0,
        help="Hz: a non-periodic run's zero-phase low-pass on q before differentiation",
    )
    d.add_argument("--validate", help="another log to validate on (RMS torque error per joint)")
    d.add_argument(
        "--synthetic",
        action="store_true",
        help="no robot: design the excitation, simulate it with noise on the loopback, identify, compare",
    )
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--band", type=float, default=6.0, help="Hz: the parallel low-pass on tau and Y (seed 004: 6)")
    d.add_argument("--min-abs", type=float, default=0.01, help="essential: eliminate |value| below this ...")
    d.add_argument("--max-rsd", type=float, default=40.0, help="... with an RSD above this, %% (seed 004: 0.01, 40)")
    d.add_argument("--ols", action="store_true", help="ordinary least squares (default: per-joint weighted)")
    d.add_argument(
        "--min-speed",
        type=float,
        help="rad/s: a joint's equations slower than this are left out (default 0.05: Coulomb friction "
        "sign(qd) is undefined at rest; 0, the default with --fit-coulomb-scale, keeps them, for a "
        "smooth tanh model)",
    )
    d.add_argument(
        "--fit-coulomb-scale",
        action=argparse.BooleanOptionalAction,
        help="choose each joint's smooth Coulomb scale tanh(qd/v) from v in 0.001-0.05 rad/s by its fit "
        "residual (the identified YAML carries them; the C must be regenerated from it). Default: "
        "on for a recorded run (no --excitation) of a description with tanh Coulomb friction",
    )
    d.add_argument(
        "--method",
        choices=("idim-ls", "didim", "clie", "cloe", "all"),
        help="output-error identification of a closed-loop run (seed 002): DATA is a log of the pid "
        "pipeline tracking its q_des; IDIM-LS always runs as the reference",
    )
    d.add_argument(
        "--sensitivities",
        choices=("exact", "fd"),
        default="exact",
        help="CLIE/CLOE Jacobian: exact forward sensitivities or finite differences (b + 1 simulations)",
    )
    d.add_argument(
        "--gains",
        help="YAML of the controller that ran (kp, kd, ki, i_max, tau_max, drive_gain, "
        "gravity_compensation); default: the pid pipeline's defaults",
    )
    d.add_argument(
        "--init",
        choices=("description", "idim-ls"),
        default="description",
        help="start of DIDIM/CLIE/CLOE: the description's (CAD) parameters or the IDIM-LS estimate",
    )
    d.add_argument(
        "--parameters",
        choices=("essential", "base"),
        default="essential",
        help="estimate IDIM-LS's essential parameters (seed 002) or all base parameters",
    )
    d.add_argument("--max-iter", type=int, default=30, help="iterations of DIDIM / Jacobians of LM")
    d.add_argument(
        "--decimate",
        action="store_true",
        help="DIDIM/CLIE/CLOE on the parallel-filtered, decimated signals (seed 002 Tables 4-5)",
    )
    d.add_argument("--json", action="store_true", help="print the JSON document")
    d.add_argument(
        "--out",
        help="folder for identification.{json,md,png}, identification_validation.png (with "
        "--validate), <robot>_identified.{yaml,urdf} and config_identified.json (model.params "
        "for the description's C; not with --fit-coulomb-scale) (--method: "
        "output_error.{json,md} and output_error_autocorrelation.png)",
    )
    d.set_defaults(handler=cmd_identify)
    im = sub.add_parser("import-log", help="a recorded run (seed 000's LWA-4P .mat) -> the log format (.npz)")
    im.add_argument("file", help="a seed 000 run: time, q, dq_hat, q_d, I_c (../shared/data/lwa4p/4ms_*_run1.mat)")
    im.add_argument(
        "--robot",
        required=True,
        help="bundled name or a .yaml path (its encoders, gear ratios, torque constants and current limits)",
    )
    im.add_argument("--out", required=True, help="the log to write (.npz, docs/realtime.md)")
    im.set_defaults(handler=cmd_import_log)
    t = sub.add_parser("thresholds", help="collision thresholds from a collision-free log (max |r| x margin)")
    t.add_argument("robot", help="bundled name or a .yaml path")
    t.add_argument("data", help="a collision-free log (.npz, docs/realtime.md, or a seed 000 .mat run)")
    t.add_argument(
        "--observer",
        choices=("momentum", "adaptive", "direct"),
        help="the residual to design for (default: the description's)",
    )
    t.add_argument("--estimator", help="velocity estimator of the pipeline (default: the description's)")
    t.add_argument("--config", help="config JSON to start from (gains of the observer, encoders, model)")
    t.add_argument("--margin", type=float, default=1.2, help="factor on the largest residual (>= 1)")
    t.add_argument("--floor", type=float, default=0.0, help="added to every threshold, N m")
    t.add_argument("--skip", type=float, default=0.5, help="seconds of start-up left out")
    t.add_argument("--out", help="write the config JSON with det.threshold set (and the tuned settings)")
    t.add_argument(
        "--tune",
        action="store_true",
        help="first choose the adaptive observer's damping lambda (obs.lam) that gives the lowest "
        "thresholds on DATA (its gain K and the estimator are kept)",
    )
    t.add_argument(
        "--check",
        metavar="OTHER",
        help="another collision-free run: its residual against the thresholds (false alarms)",
    )
    t.add_argument("--plot", metavar="PNG", help="r(t) per joint with the thresholds (and --check's run)")
    t.add_argument("--json", action="store_true", help="print the JSON document")
    t.set_defaults(handler=cmd_thresholds)
    c = sub.add_parser("collide", help="collision detection scenario (seed 001 §IV): thresholds, delays, false alarms")
    c.add_argument("robot", help="bundled name or a .yaml path")
    c.add_argument("--model-error", type=float, default=0.1, help="model = description x U(1 -+ this) (seed 001: 0.1)")
    c.add_argument("--amplitude", type=float, default=5.0, help="external torque step, N m")
    c.add_argument("--joint", type=int, default=2, help="joint the external torque acts on (1-based)")
    c.add_argument(
        "--observers",
        nargs="+",
        default=["momentum", "adaptive", "direct", "adaptive_measured", "direct_measured"],
        help="residuals to compare (*_measured: exact qd, qdd from the simulator)",
    )
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--json", action="store_true", help="print the JSON document")
    c.add_argument("--out", help="folder for collide.{json,md,png}")
    c.set_defaults(handler=cmd_collide)
    el = sub.add_parser("elastic", help="elastic arms (seed 003): two-stage identification, tau_el collision test")
    el_actions = el.add_subparsers(dest="action", required=True)
    ei = el_actions.add_parser(
        "identify",
        help="design both stages' excitations, simulate, identify, validate (seed 003 §4.3.1, Tables 4.2-4.5)",
    )
    ec = el_actions.add_parser(
        "collide", help="the tau_el momentum observer and the reflex on seed 003 §5.3's obstacle (Fig. 5.5)"
    )
    for a in (ei, ec):
        a.add_argument("robot", help="bundled name (e.g. biorob4) or a .yaml path with elastic joints")
        a.add_argument("--out", help="folder for the JSON, markdown / figure")
        a.add_argument("--json", action="store_true", help="print the JSON document")
        a.set_defaults(handler=cmd_elastic)
    ei.add_argument("--periods", type=int, default=6, help="excitation periods simulated per stage (first skipped)")
    ei.add_argument("--noise", type=float, default=0.02, help="motor-torque (current) noise, N m standard deviation")
    ei.add_argument("--starts", type=int, default=2, help="IPOPT starts per excitation design")
    ei.add_argument("--seed", type=int, default=0)
    ei.add_argument(
        "--actuator",
        help="recorded run of the actuator stage's excitation (log .npz; with the next three: "
        "identify from logs instead of the simulated study)",
    )
    ei.add_argument("--actuator-excitation", help="its excitation (manipgen excite --stage actuator --out)")
    ei.add_argument("--load", help="recorded run of the load stage's excitation (log .npz)")
    ei.add_argument("--load-excitation", help="its excitation (manipgen excite --out)")
    ei.add_argument("--validate", help="another recorded run to validate on (log .npz)")
    ei.add_argument(
        "--current",
        action="store_true",
        help="the logs' tau holds armature currents (A): motor "
        "torque = gear_ratio x torque_constant x current (eq. 4.51)",
    )
    ei.add_argument("--config", help="config JSON of the recorded runs (e.g. their enc.motor_offset)")
    ei.add_argument(
        "--motor-offsets",
        action="store_true",
        help="also estimate each motor encoder's offset (incremental encoders referenced imprecisely)",
    )
    ec.add_argument("--threshold", type=float, default=0.1, help="residual threshold per joint, N m (seed 003: 0.1)")
    ec.add_argument("--k-r", type=float, default=0.03, help="reflex gain K_R, rad/s per N m (seed 003: 0.03)")
    tp = sub.add_parser("target", help="cross-compile for a Cortex-M and run the step in QEMU (footprint, timing)")
    actions = tp.add_subparsers(dest="action", required=True)
    for action, text in (
        ("build", "static library and QEMU test firmware (runtime/target/Makefile)"),
        ("run", "replay a recorded run through rt_step in QEMU and compare with the host build"),
    ):
        a = actions.add_parser(action, help=text)
        a.add_argument("robot", help="bundled name or a .yaml path")
        a.add_argument("--cpu", required=True, help="cortex-m4f (single-precision FPU) or cortex-m7 (double)")
        a.add_argument("--precision", choices=("float", "double"), default="double")
        a.add_argument("--estimator", help="velocity estimator (default: the description's)")
        a.add_argument("--observer", help="collision observer (default: the description's)")
        a.add_argument("--controller", help="controller (default: the description's)")
        a.add_argument("--out", help="build folder (default out/target/<robot>-<cpu>-<precision>)")
        if action == "run":
            a.add_argument(
                "--input",
                help="log to replay (.npz, docs/realtime.md; default: the demo's collision "
                "run, recorded on the host loopback)",
            )
            a.add_argument("--config", help="config JSON of the logged run (thresholds, gains)")
            a.add_argument("--timeout", type=float, default=600.0, help="seconds QEMU may take")
            a.add_argument("--json", action="store_true", help="print the JSON document")
        a.set_defaults(handler=cmd_target)
    add_force_options(sub)
    return run(parser, argv)


if __name__ == "__main__":
    raise SystemExit(main())

"""`manipgen identify`: base, essential and physical parameters from an excitation log or a recorded
run (Xu et al. 2020)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from host_tools.cli.generate import add_beyond_limits, add_robot_arguments
from host_tools.cli.progress import stage
from host_tools.cli.scheduler_option import add_scheduler, executor_for, scheduler_refused

if TYPE_CHECKING:
    from rich.console import Console

    from codegen.model.robot import Robot
    from host_tools.data.checks import LogChecks
    from host_tools.data.csvdata import Samples
    from host_tools.data.logs import Log
    from host_tools.identification.closed_loop import Loop
    from host_tools.identification.pipeline import IdentSettings


def add_parser(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser(
        "identify",
        help="base, essential and physical parameters from an excitation log or a recorded run (Xu et al. 2020)",
    )
    add_robot_arguments(d)
    add_beyond_limits(d)
    d.add_argument(
        "data",
        nargs="?",
        help="excitation run: a log (.npz, docs/realtime.md), a CSV "
        "(time s, q1..qn rad[, qd1..qdn rad/s], tau1..taun N m; irregular stamps resampled; docs/identification.md), "
        "a Liu et al. .mat run or a ROS bag with one JointState topic (several: manipgen import-log --topic first)",
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
    d.add_argument("--validate", help="another log to validate on, any format DATA takes (RMS torque error per joint)")
    d.add_argument(
        "--synthetic",
        action="store_true",
        help="no robot: design the excitation, simulate it with noise on the loopback, identify, compare",
    )
    d.add_argument("--seed", type=int, default=0)
    _fit_arguments(d)
    _output_error_arguments(d)
    _output_arguments(d)
    d.set_defaults(handler=run)


def _fit_arguments(d: argparse.ArgumentParser) -> None:
    """The inverse-dynamics fit: filter, essential parameters, least squares, friction."""
    d.add_argument("--band", type=float, default=6.0, help="Hz: the parallel low-pass on tau and Y (Xu et al. 2020: 6)")
    d.add_argument("--min-abs", type=float, default=0.01, help="essential: eliminate |value| below this ...")
    d.add_argument(
        "--max-rsd", type=float, default=40.0, help="... with an RSD above this, %% (Xu et al. 2020: 0.01, 40)"
    )
    d.add_argument("--ols", action="store_true", help="ordinary least squares (default: per-joint weighted)")
    d.add_argument(
        "--min-speed",
        type=float,
        help="rad/s: a joint's equations slower than this are left out (default 0.05: Coulomb friction "
        "sign(qd) is undefined at rest; 0, the default with --fit-coulomb-scale or a tanh Coulomb "
        "description, keeps them, for a smooth tanh model, and so does the fit with the friction terms "
        "where some joint keeps a smooth Coulomb term; given, it holds for every fit)",
    )
    d.add_argument(
        "--fit-coulomb-scale",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="choose each joint's smooth Coulomb scale tanh(qd/v) from v in 0.001-0.05 rad/s by its fit "
        "residual (the identified YAML carries them; the C must be regenerated from it)",
    )
    d.add_argument(
        "--friction-terms",
        action=argparse.BooleanOptionalAction,
        help="a recorded run: choose per joint, on held-out blocks of DATA, an offset, Dahl (position-domain), "
        "load-dependent, Stribeck and smooth Coulomb (FT tanh(qd/v_t)) friction terms beyond the description's "
        "viscous + Coulomb, each kept only "
        "where it lowers the joint's held-out error (docs/identification.md). Default: on for a recorded run "
        "(no --excitation), whatever the description's Coulomb shape",
    )
    d.add_argument(
        "--velocity",
        choices=("recorded", "estimate", "auto"),
        default="auto",
        help="a recorded run's joint velocity: the log's recorded (measured or drive-estimated) velocity "
        "low-passed at --cutoff-q, or the estimate from the low-passed positions (central differences); "
        "auto (default): the one with the lower held-out error on blocks of DATA (estimate if the log "
        "carries no velocity; recorded on such a log is refused); docs/identification.md",
    )


def _output_error_arguments(d: argparse.ArgumentParser) -> None:
    """Output-error identification of a closed-loop run (--method)."""
    d.add_argument(
        "--method",
        choices=("idim-ls", "didim", "clie", "cloe", "all"),
        help="output-error identification of a closed-loop run (Brunot et al. 2019): DATA is a log of the pid "
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
        help="estimate IDIM-LS's essential parameters (Brunot et al. 2019) or all base parameters",
    )
    d.add_argument("--max-iter", type=int, default=30, help="iterations of DIDIM / Jacobians of LM")
    d.add_argument(
        "--decimate",
        action="store_true",
        help="DIDIM/CLIE/CLOE on the parallel-filtered, decimated signals (Brunot et al. 2019 Tables 4-5)",
    )


def _output_arguments(d: argparse.ArgumentParser) -> None:
    """The input checks' flagged samples, the start position, the outputs and the scheduler."""
    d.add_argument(
        "--keep-flagged",
        action="store_true",
        help="fit and validate on the samples the input checks flag (clipped drives, off-trajectory, "
        "time-stamp gaps and faults, repeated samples, whole-arm standstill: host_tools.data.checks) instead "
        "of leaving them out",
    )
    d.add_argument(
        "--start-position",
        metavar="Q1,Q2,...",
        help="rad (m): the joints' positions at the log's first sample, for encoder counters that wrap "
        "within a joint's travel (the absolute start is otherwise unknown and the run is refused)",
    )
    d.add_argument("--json", action="store_true", help="print the JSON document")
    d.add_argument(
        "--out",
        help="folder for identification.{json,md,png}, identification_validation.png (with "
        "--validate), <robot>_identified.{yaml,urdf} and config_identified.json (the run-time "
        "model.params, model.coulomb_scale and friction terms fric.* for the description's C) (--method: "
        "output_error.{json,md} and output_error_autocorrelation.png)",
    )
    add_scheduler(
        d,
        "physical fit's starts and output error's simulations",
        "the starts here one after the other, the simulations in threads",
    )


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from codegen.errors import DescriptionError
    from codegen.model.description import load_robot

    console = Console(stderr=True, soft_wrap=True, markup=False)
    if scheduler_refused(args, console):
        return 2
    if args.synthetic == bool(args.data):
        console.print(
            "manipgen: error: give a DATA log (an excitation run with --excitation, or a recorded run) "
            "or --synthetic, not both or neither"
        )
        return 2
    if args.method:
        if args.fit_coulomb_scale or args.friction_terms or args.min_speed is not None or args.velocity != "auto":
            console.print(
                "manipgen: error: --fit-coulomb-scale, --friction-terms, --velocity and --min-speed belong to the "
                "inverse-dynamics identification (without --method)"
            )
            return 2
        return _identify_closed_loop(args, console)
    try:
        robot = load_robot(args.robot, base_link=args.base_link, tip_link=args.tip_link, overlay=args.overlay)
    except DescriptionError as err:
        console.print(f"manipgen: error: {err}")
        return 2
    settings = _settings(args, robot, console)
    if settings is None:
        return 2
    return _identify(args, robot, settings, console)


def _settings(args: argparse.Namespace, robot: Robot, console: Console) -> IdentSettings | None:
    """The identification's settings from the options (None: refused, the reason printed)."""
    from host_tools.identification.pipeline import (
        COULOMB_SCALE_GRID,
        IdentSettings,
        default_min_speed,
        fits_friction_terms,
    )

    fit_scales = bool(args.fit_coulomb_scale)
    terms = args.friction_terms
    recorded = not (args.excitation or args.synthetic)
    if terms is None:
        terms = fits_friction_terms(robot, recorded)
    elif terms and not fits_friction_terms(robot, recorded):
        console.print("manipgen: error: --friction-terms: for a recorded run (no --excitation, not --synthetic)")
        return None
    if args.velocity == "recorded" and not recorded:
        console.print("manipgen: error: --velocity recorded: for a recorded run (no --excitation, not --synthetic)")
        return None
    settings = IdentSettings(
        band=args.band,
        min_abs=args.min_abs,
        max_rsd=args.max_rsd,
        weighted=not args.ols,
        cutoff_q=args.cutoff_q,
        min_speed=default_min_speed(robot, fit_scales, terms) if args.min_speed is None else args.min_speed,
        coulomb_scales=COULOMB_SCALE_GRID if fit_scales else (),
        friction_terms=terms,
        smooth_near_rest=args.min_speed is None,
        velocity=args.velocity if recorded else "estimate",
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
        return None
    return settings


def _identify(args: argparse.Namespace, robot: Robot, settings: IdentSettings, console: Console) -> int:
    """identify without --method: load the logs once, identify, write the report."""
    import json
    from pathlib import Path

    from codegen.errors import DescriptionError
    from host_tools.data.checks import check_log, parse_start_position, require_absolute_positions
    from host_tools.data.formats import read_log
    from host_tools.data.logs import LogError
    from host_tools.identification.excitation import Excitation
    from host_tools.identification.input_checks import InputChecks
    from host_tools.identification.pipeline import recorded_velocity, rigid_only
    from host_tools.identification.run import identify_run
    from host_tools.reports.identification import document, figure_arrays, table, write

    beyond = args.beyond_limits

    def data(path: str) -> tuple[Log | Samples, LogChecks | None]:
        """What to fit (a CSV's own positions and torques, else the log) and the log's input checks."""
        f = read_log(path, robot, start_position=start)
        return (f.log if f.samples is None else f.samples), check_log(f.log, robot, path, beyond_limits=beyond)

    try:
        start = parse_start_position(args.start_position, robot, beyond) if args.start_position else None
        with stage(console, "identifying ...") as status, executor_for(args.scheduler) as executor:
            if args.synthetic:
                require_absolute_positions(robot, start)
                doc, arrays = _synthetic(args, robot, settings, lambda s: status.update(s), start)
            else:
                # without an excitation: a recorded non-periodic run (e.g. Liu et al.'s LWA-4P runs)
                exc = Excitation.load(args.excitation) if args.excitation else None
                log, log_checks = data(args.data)
                if settings.velocity == "recorded" and recorded_velocity(log) is None:
                    raise ValueError(
                        f"{args.data}: --velocity recorded: the log records no joint velocity "
                        "(a CSV's qd columns, a log's qd_hat_logged); use --velocity estimate or auto"
                    )
                validate, validate_checks = data(args.validate) if args.validate else (None, None)
                checks = InputChecks(log_checks, validate_checks, args.keep_flagged)
                for line in checks.lines():
                    console.print(f"manipgen: check: {line}")
                rigid_only(robot, args.robot)
                result = identify_run(
                    robot,
                    log,
                    exc,
                    validate,
                    settings,
                    stage=lambda s: status.update(s),
                    checks=checks,
                    executor=executor,
                )
                doc, arrays = document(result), figure_arrays(result)
        written = write(doc, arrays, robot, Path(args.out)) if args.out else []
    except (ValueError, LogError, OSError, RuntimeError, DescriptionError) as exc_:
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


def _synthetic(
    args: argparse.Namespace,
    robot: Robot,
    settings: IdentSettings,
    status: Callable[[str], None],
    start: tuple[float, ...] | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """identify --synthetic: the round trip on the loopback; its document and figure arrays."""
    from host_tools.identification.pipeline import rigid_only
    from host_tools.identification.synthetic import Synthetic, synthetic
    from host_tools.reports.identification import figure_arrays, synthetic_document

    rigid_only(robot, args.robot)
    result = synthetic(robot, Synthetic(seed=args.seed), settings, stage=status, start=start)
    return synthetic_document(result), figure_arrays(result.run)


def _identify_closed_loop(args: argparse.Namespace, out: Console) -> int:
    """identify --method ...: output-error identification of a closed-loop run (Brunot et al. 2019)."""
    import json
    from pathlib import Path

    from codegen.errors import DescriptionError
    from host_tools.bindings.source import RobotSource
    from host_tools.data.logs import LogError
    from host_tools.identification.closed_loop_run import (
        OESynthetic,
        identify_closed_loop,
        methods_of,
        oe_data,
        synthetic_run,
    )
    from host_tools.identification.least_squares import model
    from host_tools.identification.output_error import OESettings
    from host_tools.identification.pipeline import rigid_only
    from host_tools.reports.output_error import document, single, tables, write

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
        # read once: output error's work items carry its text
        description = RobotSource.of(args.robot, args.base_link, args.tip_link, args.overlay)
        robot = description.robot()
        found: LogChecks | None = None
        with out.status("identifying ...") as status, executor_for(args.scheduler) as executor:
            if args.synthetic:
                opts = OESynthetic(seed=args.seed)
                status.update("simulating the closed-loop run (loopback)")
                rigid_only(robot, args.robot)
                log, loop = synthetic_run(robot, opts)
                truth = model(robot).true_base()
                init_error, source = opts.init_error, "synthetic run"
            else:
                log, loop, found = _closed_loop_log(args, robot, out)
                truth, init_error, source = None, 0.0, str(args.data)
            try:
                rigid_only(robot, args.robot)
                result = identify_closed_loop(
                    description,
                    oe_data(robot, log, loop.drive_gain, source),
                    loop,
                    methods,
                    settings,
                    args.init,
                    init_error,
                    args.parameters,
                    args.seed,
                    truth,
                    stage=lambda s: status.update(s),
                    executor=executor,
                )
            except ValueError as err:
                text = str(err)
                raise ValueError(text if text.startswith(source) else f"{source}: {text}") from None
        doc = document(result)
        if args.synthetic:
            doc["synthetic"] = vars(opts)
        if found is not None:  # the input checks' findings, as identify's other methods give them
            doc["checks"] = [{**c, "source": found.source} for c in found.as_json()]
            doc["flagged_left_out"] = False
        written = write(doc, result.results, Path(args.out)) if args.out else []
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


def _closed_loop_log(args: argparse.Namespace, robot: Robot, out: Console) -> tuple[Log, Loop, LogChecks]:
    """A DATA log of the closed loop, its input checks (printed) and the loop that ran (--gains)."""
    from codegen.model.yamlio import load_yaml
    from host_tools.data.checks import check_log, parse_start_position, with_start_position
    from host_tools.data.formats import read_log
    from host_tools.identification.closed_loop_run import loop_for

    if str(args.data).lower().endswith(".csv"):
        raise ValueError(
            f"{args.data}: output-error methods need the reference trajectory the "
            "controller tracked: give a log (.npz) with q_des and qd_des"
        )
    log = read_log(args.data, robot).log
    if bool(log.extra.get("tau_sampled", False)):  # a bag, or a CSV or bag through import-log
        raise ValueError(
            f"{args.data}: tau_sampled: a measured log (a ROS bag's or a CSV's rows) records no reference "
            "trajectory (its q_des is the measured position) and no commanded torque: output-error methods "
            "need the controller's own log (.npz) with q_des and qd_des"
        )
    beyond = args.beyond_limits
    start = parse_start_position(args.start_position, robot, beyond) if args.start_position else None
    found = check_log(log, robot, str(args.data), start, beyond_limits=beyond)
    for line in found.lines():
        out.print(f"manipgen: check: {line}")
    # output error simulates the run whole on its time grid, the controller's own
    # saturation (tau_max) included: stamps that jump or repeat break it; the other
    # findings are reported (a clip the loop does not model shows as its error)
    stamps = sum(f.samples for f in found.findings if f.kind in ("time", "gap"))
    if stamps and not args.keep_flagged:
        raise ValueError(
            f"{args.data}: {stamps} samples flagged by the time-stamp check; output error "
            "simulates the run whole on a uniform grid: cut the run (or --keep-flagged to use it as it is)"
        )
    if start is not None:
        log = with_start_position(log, robot, start)
    gains = load_yaml(args.gains).data if args.gains else None
    if args.gains and not isinstance(gains, dict):
        raise ValueError(
            f"{args.gains}: expected a mapping of kp, kd, ki, i_max, tau_max, drive_gain, "
            "gravity_compensation (docs/identification.md)"
        )
    try:
        loop = loop_for(robot, gains)
    except ValueError as err:
        raise ValueError(f"{args.gains}: {err}" if args.gains else str(err)) from None
    return log, loop, found

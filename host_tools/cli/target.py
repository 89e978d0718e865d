"""`manipgen target`: cross-compile for a Cortex-M and run the step in QEMU (footprint, timing)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from codegen.emit.files import write_file
from host_tools.cli import target_linux
from host_tools.cli.generate import add_robot_arguments, robot_of
from host_tools.cli.progress import StageBar, stage

if TYPE_CHECKING:
    from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    tp = sub.add_parser("target", help="cross-compile for a Cortex-M and run the step in QEMU (footprint, timing)")
    actions = tp.add_subparsers(dest="action", required=True)
    for action, text in (
        ("build", "static library and QEMU test firmware (runtime/target/Makefile)"),
        ("run", "replay a recorded run through rt_step in QEMU and compare with the host build"),
        (
            "pil",
            "processor in the loop: the step from a 1 kHz SysTick interrupt in QEMU, the host's plant over "
            "the board's UART, on the demo's collision run",
        ),
    ):
        a = actions.add_parser(action, help=text)
        add_robot_arguments(a)
        a.add_argument(
            "--cpu",
            required=action == "run",
            help="cortex-m4f (mps2-an386) or cortex-m33 (mps2-an505), single-precision FPU; cortex-m7 (mps2-an500), "
            "double-precision FPU",
        )
        if action in ("build", "pil"):
            a.add_argument(
                "--board",
                choices=("stm32f405",),
                help="a board port instead of QEMU's MPS2 board of --cpu: stm32f405 (Cortex-M4F, 168 MHz; QEMU's "
                "netduinoplus2 for pil; build writes .elf, .bin, .hex, the flash map and the flash commands)",
            )
        a.add_argument(
            "--precision",
            choices=("float", "double"),
            help="real type (default: what the CPU's FPU computes: float on cortex-m4f and cortex-m33, double on "
            "cortex-m7; double on a single-precision FPU is soft-float, about 25x slower)",
        )
        a.add_argument("--estimator", help="velocity estimator (default: the description's)")
        a.add_argument("--observer", help="collision observer (default: the description's)")
        a.add_argument("--controller", help="controller (default: the description's)")
        a.add_argument("--out", help="build folder (default out/target/<robot>-<cpu>-<precision>)")
        if action == "build":
            a.add_argument(
                "--config", help="with --board: a config JSON to flash (thresholds, gains; default: the generated one)"
            )
            a.add_argument(
                "--hse-hz",
                type=int,
                default=8_000_000,
                help="with --board stm32f405: the external crystal in Hz (8000000: ST's Discovery boards; 25000000: "
                "the Netduino Plus 2)",
            )
        if action == "run":
            a.add_argument(
                "--input",
                help="log to replay (.npz, docs/realtime.md; default: the demo's collision "
                "run, recorded on the host loopback)",
            )
            a.add_argument("--config", help="config JSON of the logged run (thresholds, gains)")
            a.add_argument("--timeout", type=float, default=600.0, help="seconds QEMU may take")
            a.add_argument("--json", action="store_true", help="print the JSON document")
        if action == "pil":
            a.add_argument(
                "--corrupt",
                type=int,
                action="append",
                default=[],
                metavar="K",
                help="flip one byte of sample K's input frame on the wire (fault injection: the board must count "
                "it); repeatable",
            )
            a.add_argument(
                "--seconds",
                type=float,
                default=8.0,
                help="length of the collision run, push at half time (8: the demo's)",
            )
            a.add_argument("--json", action="store_true", help="print the JSON document")
        a.set_defaults(handler=run)
    target_linux.add_parser(actions)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rich.console import Console

    from codegen.blocks.options import OptionError
    from codegen.errors import DescriptionError
    from host_tools.bindings.rt import ConfigError, load_rt, with_config_terms
    from host_tools.data.logs import LogError
    from host_tools.target import cortex_m as tg

    console = Console(stderr=True, soft_wrap=True, markup=False)
    board = getattr(args, "board", None)
    if board is not None:
        from host_tools.target import stm32

        if args.cpu not in (None, stm32.CPU):
            console.print(f"manipgen: error: --board {board} is a {stm32.CPU}, not --cpu {args.cpu}")
            return 2
        args.cpu = stm32.CPU
    if args.cpu not in tg.CPUS:
        console.print(f"manipgen: error: --cpu (or --board) must be one of {', '.join(tg.CPUS)}, got {args.cpu!r}")
        return 2
    if args.precision is None:
        args.precision = tg.NATIVE_PRECISION[args.cpu]
    options = {"estimator": args.estimator, "observer": args.observer, "controller": args.controller}
    if args.action == "pil":
        return _pil(args, options, console)
    if board is not None:
        return _board_build(args, options, console)
    try:
        robot = robot_of(args)
        if args.config:  # the friction terms it sets are generated (an identified config's, #47)
            robot = with_config_terms(robot, args.config)
        rt = load_rt(robot, precision=args.precision, **options)
        out = Path(args.out) if args.out else tg.default_out(rt.name, args.cpu, args.precision)
        with StageBar(console, f"cross-compiling {robot.name} for {args.cpu} ({args.precision}) ...") as status:
            b = tg.build(rt, args.cpu, out)
            if args.action == "build":
                console.print(f"built {b.lib} and {b.elf}")
                return 0
            status.update(f"reading {args.input} ..." if args.input else "recording the run to replay ...")
            host = load_rt(robot, precision="double", **options)
            inputs, source = tg.recorded_inputs(
                robot,
                rt,
                host,
                Path(args.input) if args.input else None,
                Path(args.config) if args.config else None,
                out,
            )
            status.update(f"{len(inputs)} samples through {rt.name}_rt_step in QEMU ({args.cpu}) ...")
            run = tg.run_firmware(b, rt, rt.config_bytes(), inputs, timeout=args.timeout, progress=status.count)
            status.update("comparing with the host build, footprint ...")
            doc = tg.report(b, rt, inputs, run)
    except (ValueError, LogError, ConfigError, OptionError, DescriptionError, OSError, tg.TargetError) as exc:
        console.print(f"manipgen: error: {exc}")
        return 2
    doc["input"] = source
    return write_report(out, "target", doc, tg.table(doc), args.json, f"input: {source}\n")


def write_report(out: Path, stem: str, doc: dict[str, Any], table: str, as_json: bool, note: str = "") -> int:
    """A target command's result: ``out/<stem>.json`` and ``.md``; the JSON on stdout with --json,
    else the table, ``note`` and the files written. Returns the exit code (0)."""
    import json

    text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
    write_file(out / f"{stem}.json", text)
    write_file(out / f"{stem}.md", table)
    if as_json:
        print(text, end="")
    else:
        print(table + f"\n{note}wrote {out / (stem + '.json')}, {out / (stem + '.md')}")
    return 0


def _pil(args: argparse.Namespace, options: dict[str, str | None], console: Any) -> int:
    from pathlib import Path

    from codegen.blocks.options import OptionError
    from codegen.errors import DescriptionError
    from host_tools.bindings.rt import ConfigError
    from host_tools.target import cortex_m as tg
    from host_tools.target import pil

    try:
        robot = robot_of(args)
        name = robot.c_name
        where = args.board or args.cpu
        out = Path(args.out) if args.out else Path(f"{tg.default_out(name, where, args.precision)}-pil")
        with StageBar(console, f"{robot.name} in the loop on {where} ({args.precision})") as bar:
            doc = pil.pil(
                robot,
                args.cpu,
                args.precision,
                out,
                options,
                frozenset(args.corrupt),
                args.seconds,
                args.board,
                stage=lambda text: bar.update(f"{robot.name} in the loop on {where}: {text}"),
                samples=bar.count,
            )
    except (ValueError, ConfigError, OptionError, DescriptionError, OSError, tg.TargetError) as exc:
        console.print(f"manipgen: error: {exc}")
        return 2
    return write_report(out, "pil", doc, pil.table(doc), args.json)


def _board_build(args: argparse.Namespace, options: dict[str, str | None], console: Any) -> int:
    """`target build --board stm32f405`: the images, the flash map, the commands that flash them."""
    import json
    from pathlib import Path

    from codegen.blocks.options import OptionError
    from codegen.errors import DescriptionError
    from host_tools.bindings.rt import ConfigError, load_rt, with_config_terms
    from host_tools.target import cortex_m as tg
    from host_tools.target import stm32

    try:
        robot = robot_of(args)
        if args.config:  # the friction terms it sets are generated (an identified config's, #47)
            robot = with_config_terms(robot, args.config)
        rt = load_rt(robot, precision=args.precision, **options)  # type: ignore[arg-type]
        out = Path(args.out) if args.out else tg.default_out(rt.name, args.board, args.precision)
        config = None
        if args.config:
            rt.config.load(Path(args.config))
            files = rt.config_sources("mg_flashed_config", "mg_flashed_config", f"manipgen target build: {args.config}")
            out.mkdir(parents=True, exist_ok=True)
            for file, text in files.items():
                write_file(out / file, text)
            config = (out.resolve() / "mg_flashed_config.c", "mg_flashed_config")
        with stage(console, f"building {robot.name} for the {args.board} ({args.precision}) ..."):
            image = stm32.build(rt, out, config=config, hse_hz=args.hse_hz)
            doc = stm32.flash_map(image)
    except (ValueError, ConfigError, OptionError, DescriptionError, OSError, tg.TargetError) as exc:
        console.print(f"manipgen: error: {exc}")
        return 2
    doc["config"] = args.config or f"{rt.name}_rt_default_config (generated)"
    doc["flash_commands"] = stm32.flash_commands(image)
    write_file(out / "flash_map.json", json.dumps(doc, indent=1) + "\n")
    write_file(out / "flash_map.md", stm32.map_table(doc))
    print(stm32.map_table(doc))
    print("wrote " + ", ".join(doc["files"].values()) + f", {out / 'flash_map.json'}, {out / 'flash_map.md'}")
    print("to flash a board (not run here):\n  " + "\n  ".join(doc["flash_commands"]))
    return 0

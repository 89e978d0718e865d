"""Encoder read: raw counter values -> joint positions, with wrap-around and lost samples.

Per joint, the encoder the description declares (``counts``; link or motor side, with the gear
ratio then) and, on an elastic arm only, a second, motor-side one (``motor_counts``; a rigid arm's
pipeline has no second channel):
a 16- or 32-bit counter, signed or unsigned, is unwrapped into a 64-bit count (runtime
``mg_unwrap``: differences modulo 2^bits, so any number of turns either way; the counter's mask
2^bits - 1 computed once at configuration, ``mg_counter_mask``). Then
``q = (count * rad_per_count) * direction / gear + offset`` with rad_per_count = 2 pi / cpr computed
once at configuration: this order reproduces real logged positions exactly (Liu et al.'s LWA-4P logs,
1 mdeg = 2 pi / 360000 per count). A sample with ``valid = 0`` (communication loss) keeps the
previous position, increments the joint's fault counter and tells the estimators.
On an elastic arm, a second encoder with ``motor_cpr = 0`` is absent (its count stays 0, so
``theta`` = motor_offset); by default it is the joint's ``elastic.motor_encoder``.
Prismatic joints: cpr counts per 2 pi metres of travel (the same formula; set cpr accordingly).
Float builds convert the 64-bit count to float: exact up to 2^24 counts (46 turns at 360000 cpr).
A joint whose description declares no encoder is read as 65536 counts per turn, link side.
"""

from __future__ import annotations

import math

import casadi as cs

from codegen.model.robot import Robot
from codegen.symbolic.functions import FunctionSpec

from .base import Block, Field, sx_function
from .context import Ctx

TWO_PI = 2.0 * math.pi


DEFAULT_CPR = 65536.0  # a joint whose description declares no encoder: 16 bits per turn assumed


def link_counts_per_turn(robot: Robot) -> list[float]:
    """Per joint, the counts of its (primary) encoder per link turn (per 2 pi m), as the generated
    read takes them: cpr on the link side, cpr x gear ratio on the motor side, DEFAULT_CPR where the
    description declares none."""
    return [
        DEFAULT_CPR
        if j.encoder is None
        else float(j.encoder.cpr) * (j.gear_ratio if j.encoder.side == "motor" else 1.0)
        for j in robot.joints
    ]


def _side_fields(ctx: Ctx, prefix: str, doc: str) -> list[Field]:
    """Config of the primary channel (``counts``: the encoder the description declares, on either
    side) or of the second, motor-side channel (``motor_counts``: absent until configured)."""
    n, joints = ctx.n, ctx.robot.joints
    motor = prefix == "motor_"
    # the second channel: an elastic joint's motor encoder (absent on rigid joints)
    encs = [(j.elastic.motor_encoder if j.elastic else None) if motor else j.encoder for j in joints]
    cpr = [
        (float(e.cpr) if e is not None else 0.0) if motor else (float(e.cpr) if e is not None else DEFAULT_CPR)
        for e in encs
    ]
    gear = [j.gear_ratio if motor or (e is not None and e.side == "motor") else 1.0 for j, e in zip(joints, encs)]
    bits = [float(e.bits) if e is not None else 32.0 for e in encs]
    signed = [0.0 if e is not None and not e.signed else 1.0 for e in encs]
    offsets = [e.offset if e is not None else 0.0 for e in encs]
    direction = [float(e.direction) if e is not None else 1.0 for e in encs]
    return [
        Field(
            prefix + "cpr",
            "real",
            (n,),
            f"{doc} counts per revolution of its shaft" + (" (0: absent; an elastic arm needs it)" if motor else ""),
            tuple(cpr),
            low=0.0,
            low_open=not motor or ctx.robot.elastic,
        ),
        Field(
            prefix + "gear",
            "real",
            (n,),
            f"{doc} shaft turns per joint turn (1 on the link side)",
            tuple(gear),
            low=0.0,
            low_open=True,
        ),
        Field(prefix + "offset", "real", (n,), f"{doc} zero offset (rad or m), added last", tuple(offsets)),
        Field(
            prefix + "direction",
            "real",
            (n,),
            f"{doc} counting direction, +1 or -1",
            tuple(direction),
            choices=(-1.0, 1.0),
        ),
        Field(prefix + "bits", "uint8", (n,), f"{doc} counter width, 16 or 32", tuple(bits), low=2.0, high=32.0),
        Field(
            prefix + "is_signed",
            "uint8",
            (n,),
            f"{doc} counter is two's complement (1) or unsigned (0)",
            tuple(signed),
            choices=(0.0, 1.0),
        ),
    ]


def build(ctx: Ctx) -> Block:
    n = ctx.n
    sides = ("", "motor_") if ctx.robot.elastic else ("",)  # a rigid arm has no second channel
    cfg = _side_fields(ctx, "", "encoder:")
    if ctx.robot.elastic:
        cfg += _side_fields(ctx, "motor_", "second (motor) encoder:")
    state: list[Field] = []
    for prefix in sides:
        state += [
            Field(prefix + "rpc", "real", (n,), "derived: rad (or m) per count = 2 pi / cpr"),
            Field(prefix + "mask", "uint32", (n,), "derived: counter mask 2^bits - 1 (runtime mg_counter_mask)"),
            Field(prefix + "started", "uint8", (n,), "a valid sample has been read"),
            Field(prefix + "last", "uint32", (n,), "last raw counter value"),
            Field(prefix + "total", "int64", (n,), "unwrapped count"),
        ]
    state.append(Field("faults", "uint32", (n,), "lost samples of the primary encoder so far"))
    if ctx.robot.elastic:
        state.append(Field("motor_faults", "uint32", (n,), "lost samples of the second (motor) encoder so far"))
    cprs = {prefix: ctx.sym(prefix + "cpr") for prefix in sides}
    derive = sx_function(
        "encoder_derive",
        [(f"cfg.enc.{prefix}cpr", cpr) for prefix, cpr in cprs.items()],
        [(f"st.enc.{prefix}rpc", TWO_PI / cs.fmax(cpr, 1.0)) for prefix, cpr in cprs.items()],
        "rad per count = 2 pi / cpr (cpr < 1 is treated as 1: an absent encoder)",
    )
    fns = []
    for prefix, out in (("", "out.q"), ("motor_", "out.theta"))[: len(sides)]:
        total, rpc, gear, offset, direction = (ctx.sym(x) for x in ("total", "rpc", "gear", "offset", "dir"))
        fns.append(
            sx_function(
                f"{prefix}position",
                [
                    (f"loc.{prefix}total_r", total),
                    (f"st.enc.{prefix}rpc", rpc),
                    (f"cfg.enc.{prefix}gear", gear),
                    (f"cfg.enc.{prefix}direction", direction),
                    (f"cfg.enc.{prefix}offset", offset),
                ],
                [(out, (total * rpc) * direction / gear + offset)],
                "position = (count * rad_per_count) * direction / gear + offset",
            )
        )
    return Block(
        kind="enc",
        name="encoder",
        doc=__doc__ or "",
        config=cfg,
        state=state,
        outputs=[
            Field("q", "real", (n,), "joint position from the link-side encoder (rad or m)"),
            Field("faults", "uint32", (n,), "lost samples so far, per joint"),
        ]
        + (
            [
                Field("theta", "real", (n,), "second (motor) encoder position, link-side units (rad or m)"),
                Field("motor_faults", "uint32", (n,), "lost second-encoder samples so far, per joint"),
            ]
            if ctx.robot.elastic
            else []
        ),
        functions=fns,
        derive=derive,
        template="encoder",
    )


def sensor_function(n: int) -> FunctionSpec:
    """The encoder seen from the plant's side (simulation, ``<robot>_loopback``): the real-valued
    count a shaft at q shows, ``(q - offset) * gear * direction / (2 pi / cpr)``; the loopback takes
    its floor. The inverse of ``position`` up to the quantisation."""
    q, cpr, gear, direction, offset = (cs.SX.sym(x, n) for x in ("q", "cpr", "gear", "dir", "offset"))
    rpc = TWO_PI / cs.fmax(cpr, 1.0)
    return sx_function(
        "sensor_count",
        [("q", q), ("cpr", cpr), ("gear", gear), ("direction", direction), ("offset", offset)],
        [("count", (q - offset) * gear * direction / rpc)],
        "count before quantisation = (q - offset) * gear * direction / (2 pi / cpr)",
    )

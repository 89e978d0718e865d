"""Render ``<robot>_rt.h`` / ``<robot>_rt.c``: the real-time pipeline's structs (from the blocks'
fields), its CasADi functions (as static straight-line C) and the step plumbing (templates/rt*)."""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass, replace
from typing import Any

import jinja2
import numpy as np

from codegen.blocks.base import Block, Field
from codegen.blocks.pipeline import INPUT_LIMIT, Pipeline
from codegen.emit.cfunction import view
from codegen.emit.config import config_initializer, layout_id
from codegen.emit.cprint import Precision, literal, reads_first, schedule
from codegen.emit.references import with_references
from codegen.symbolic.functions import FunctionSpec

CTYPES = {"real": "real_t", "int32": "int32_t", "uint32": "uint32_t", "int64": "int64_t", "uint8": "uint8_t"}

LOOPBACK_MAX_DELAY = 16  # longest actuation delay <robot>_loopback models, samples
# out.q and out.theta: the encoders' positions, tested right after the encoder block (which alone
# writes them: _position_outputs checks), so the end-of-step test leaves them out
POSITION_OUTPUTS = ("q", "theta")


def _decl(f: Field, real: str) -> str:
    t = real if f.ctype == "real" else CTYPES[f.ctype]
    return f"{t} {f.name}" + "".join(f"[{s}]" for s in f.shape) + ";"


@dataclass(frozen=True)
class Struct:
    name: str  # C typedef name
    doc: str
    members: tuple[tuple[str, str], ...]  # (declaration, doc)


def _template_name(b: Block) -> str:
    """Where the block's C plumbing is: templates/rt/<name>.c.j2, or its own text (registered blocks)."""
    if b.template_text:
        return f"block/{b.kind}_{b.name}.c.j2"
    name = b.template or {"est": "estimator", "ctl": "controller"}.get(b.kind, "")
    return f"rt/{name}.c.j2" if name else ""


class RtEmitter:
    def __init__(self, pipe: Pipeline, prefix: str, precision: Precision) -> None:
        self.pipe, self.p, self.precision = pipe, prefix, precision
        self.fields = pipe.fields()
        self.ops: dict[str, int] = {}

    # --- bindings -----------------------------------------------------------------------------
    def c_ref(self, binding: str) -> str:
        """A binding as a C pointer to its first element."""
        expr, shape = self.c_expr(binding), self.fields[binding].shape
        if not shape:
            return "&" + expr
        return expr if len(shape) == 1 else f"&{expr}[0][0]"

    def c_expr(self, binding: str) -> str:
        """A binding as its C lvalue (rt->cfg->det.ks, out->r)."""
        space, _, rest = binding.partition(".")
        if space == "cfg":
            expr = f"rt->cfg->{rest}"
        elif space == "st":
            expr = f"rt->{rest}"
        elif space == "in":
            expr = f"in->{rest}"
        elif space == "out":
            expr = f"out->{rest}"
        else:
            expr = rest
        return expr

    def fn_name(self, block: Block, fn: FunctionSpec) -> str:
        """<robot>_rt_<kind>_<function>; a block's derive function is <robot>_rt_<kind>_derive."""
        return f"{self.p}_rt_{block.kind}_{'derive' if fn is block.derive else fn.name}"

    def call(self, kind: str, name: str, when: dict[str, str] | None = None) -> str:
        """C statement(s) calling a block function (see _call). ``when``: per optional output's binding
        (Arg.optional), the C condition under which this call stores it."""
        block = next(b for b in self.pipe.blocks if b.kind == kind)
        fn = block.derive if block.derive is not None and block.derive.name == name else block.fn(name)
        return self._call(self.fn_name(block, fn), fn, when or {})

    def shared_call(self) -> str:
        """The call computing the locals the blocks' functions share (Pipeline.shared), or ''."""
        fn = self.pipe.shared
        return "" if fn is None else self._call(f"{self.p}_rt_{fn.name}", fn)

    def _call(self, c_name: str, fn: FunctionSpec, when: dict[str, str] | None = None) -> str:
        """The call; an output that is also an input is written in place where the function, printed
        in schedule's order, reads each of its elements before writing it (no copy), else through a
        local copied back; an optional output (Arg.optional) is stored only while ``when``'s condition
        for its binding holds (NULL is passed otherwise); every optional output needs one."""
        when = when or {}
        optional = {a.binding for a in fn.outputs if a.optional}
        if set(when) != optional:
            raise ValueError(f"{c_name}: conditions for {sorted(when)}, optional outputs {sorted(optional)}")
        args = [self.c_ref(b) for b in fn.reads]
        lines, copies = [], []
        order = schedule(fn.function) if fn.function is not None else ()
        for k, b in enumerate(fn.writes):
            if b in when:
                if b in fn.reads:
                    raise ValueError(f"{c_name}: the optional output {b} is also an input")
                args.append(f"(({when[b]}) ? {self.c_ref(b)} : NULL)")
            elif b in fn.reads and fn.function is not None and reads_first(fn.function, order, fn.reads.index(b), k):
                args.append(self.c_ref(b))
            elif b in fn.reads:
                size = self.fields[b].size
                lines.append(f"real_t tmp{k}[{size}];")
                args.append(f"tmp{k}")
                copies.append(f"(void)memcpy({self.c_ref(b)}, tmp{k}, sizeof tmp{k});")
            else:
                args.append(self.c_ref(b))
        call = f"{c_name}({', '.join(args)});"
        if not lines:
            return call
        return "{\n" + textwrap.indent("\n".join(lines + [call] + copies), "    ") + "\n}"

    # --- views --------------------------------------------------------------------------------
    def function_views(self) -> list[dict[str, Any]]:
        out = []
        for b in self.pipe.blocks:
            for fn in ([b.derive] if b.derive is not None else []) + list(b.functions):
                v = view(replace(fn, name=self.fn_name(b, fn)), self.precision, scheduled=True)
                self.ops[v["name"]] = int(v["ops"])
                out.append(v | {"bindings": ", ".join(fn.reads) + " -> " + ", ".join(fn.writes)})
        if self.pipe.shared is not None:
            fn = self.pipe.shared
            v = view(replace(fn, name=f"{self.p}_rt_{fn.name}"), self.precision, scheduled=True)
            self.ops[v["name"]] = int(v["ops"])
            out.append(v | {"bindings": ", ".join(fn.reads) + " -> " + ", ".join(fn.writes)})
        return out

    def structs(self, real: str) -> list[Struct]:
        p = self.p
        out: list[Struct] = []
        cfg_members, rt_members = [], []
        for b in self.pipe.blocks:
            if b.config:
                name = f"{p}_rt_{b.kind}_config_t"
                out.append(
                    Struct(
                        name,
                        f"Run-time config of the {b.name} block.",
                        tuple((_decl(f, real), f.doc) for f in b.config),
                    )
                )
                cfg_members.append((f"{name} {b.kind};", b.name))
        out.append(
            Struct(
                f"{p}_rt_config_t",
                "Run-time configuration: gains, thresholds, limits, model parameters. An instance "
                "reads the config it was given (no copy): it may be const, in flash. Every field "
                "is the caller's to set, within the ranges its comment gives, but a config in use "
                "changes only between steps and is then handed to _rt_configure again (derived "
                "values, the finiteness check).",
                tuple(cfg_members),
            )
        )
        for b in self.pipe.blocks:
            if b.state:
                name = f"{p}_rt_{b.kind}_state_t"
                out.append(
                    Struct(name, f"State of the {b.name} block.", tuple((_decl(f, real), f.doc) for f in b.state))
                )
                rt_members.append((f"{name} {b.kind};", b.name))
        rt_members = (
            [
                (
                    f"const {p}_rt_config_t *cfg;",
                    "the configuration in use: the caller's (_rt_init, _rt_configure); it must outlive "
                    "the instance's use",
                )
            ]
            + rt_members
            + [
                ("uint8_t first;", "1 until the first step has initialised the blocks"),
                (
                    "uint8_t config_fault;",
                    "1 if the config in use has a non-finite real value: every step then "
                    "faults (out.fault = MG_FAULT_NUMERIC) until a finite config is configured",
                ),
                ("uint32_t steps;", "samples processed since init (wraps)"),
            ]
        )
        out.append(
            Struct(
                f"{p}_rt_t",
                "One pipeline instance: a pointer to its configuration, state and workspaces. "
                "Caller-owned; read-only for the caller (outputs come in _rt_output_t); a copy is "
                "an independent instance with the same configuration.",
                tuple(rt_members),
            )
        )
        out.append(
            Struct(
                f"{p}_rt_input_t",
                "What the real-time loop hands in every sample.",
                tuple((_decl(f, real), f.doc) for f in self.pipe.inputs),
            )
        )
        out.append(
            Struct(
                f"{p}_rt_output_t", "What a step returns.", tuple((_decl(f, real), f.doc) for f in self.pipe.outputs)
            )
        )
        return out

    def config_blocks(self) -> list[tuple[str, list[Field]]]:
        return [(b.kind, list(b.config)) for b in self.pipe.blocks]

    def finite_checks(self, space: str, fields: list[Field]) -> list[dict[str, Any]]:
        """The real fields of in/out for the numeric-fault tests: C pointer and count (mg_finite_sum,
        mg_bounded), and the sum of their elements (``sum``) and of their magnitudes (``abs_sum``) as
        straight-line C (one load and add per element: no loop to pay for)."""
        out = []
        for f in fields:
            if f.ctype == "real":
                expr = self.c_expr(f"{space}.{f.name}")
                cells = [expr + "".join(f"[{i}]" for i in ix) for ix in np.ndindex(*f.shape)]
                out.append(
                    {
                        "ref": self.c_ref(f"{space}.{f.name}"),
                        "size": f.size,
                        "sum": " + ".join(cells),
                        "abs_sum": " + ".join(f"MG_FABS({c})" for c in cells),
                    }
                )
        return out

    def _position_outputs(self) -> tuple[list[Field], list[Field]]:
        """(the encoders' position outputs, the other outputs). No function of a block after the
        encoder may write the positions: the step tests them once, after the encoder block."""
        later = [blk for blk in self.pipe.blocks if blk.kind != "enc"]
        written = {b for blk in later for fn in blk.functions for b in fn.writes}
        written |= {b for blk in later if blk.derive is not None for b in blk.derive.writes}
        position = [f for f in self.pipe.outputs if f.name in POSITION_OUTPUTS]
        if any(f"out.{f.name}" in written for f in position):
            raise AssertionError(f"a block function writes an encoder position ({written & {'out.q', 'out.theta'}})")
        return position, [f for f in self.pipe.outputs if f.name not in POSITION_OUTPUTS]

    def render(self, env: jinja2.Environment, ctx: dict[str, Any]) -> tuple[str, str]:
        real = f"{self.p}_real_t"
        blocks = [
            {
                "kind": b.kind,
                "name": b.name,
                "template": _template_name(b),
                "doc_lines": inspect.cleandoc(b.doc or "").splitlines(),  # a function's docstring too
                "has_init": any(f.name == "init" for f in b.functions),
                "state": bool(b.state),
                "derive": b.derive.name if b.derive is not None else None,
                "options": b.options,
            }
            for b in self.pipe.blocks
        ]
        functions = self.function_views()
        rctx = dict(
            ctx,
            blocks=blocks,
            structs=self.structs(real),
            functions=functions,
            default_config=config_initializer(self.config_blocks(), self.precision),
            config_layout=layout_id(self.config_blocks(), self.precision),
            call=self.call,
            shared_call=self.shared_call(),
            shared_locals=[b.partition(".")[2] for b in self.pipe.shared.writes] if self.pipe.shared else [],
            options=self.pipe.options,
            label=self.pipe.options.label,
            ts=repr(self.pipe.ctx.ts),
            fabs="fabs" if self.precision == "double" else "fabsf",
            constant=self.pipe.options.constant_params,
            waiting=self.pipe.waiting_outputs,
            motor_channel=self.pipe.robot.elastic,  # a second (motor) encoder channel: elastic arms only
            finite_inputs=self.finite_checks("in", self.pipe.inputs),
            finite_outputs=self.finite_checks("out", self._position_outputs()[1]),
            finite_position=self.finite_checks("out", self._position_outputs()[0]),
            finite_config=[
                {"ref": self.c_ref(k).replace("rt->cfg->", "cfg->"), "size": f.size}
                for k, f in self.fields.items()
                if k.startswith("cfg.") and f.ctype == "real"
            ],
            input_limit=literal(INPUT_LIMIT, self.precision),
        )
        own = {_template_name(b): b.template_text for b in self.pipe.blocks if b.template_text}
        if own:  # plumbing given with a registered block, beside templates/rt
            env = env.overlay(loader=jinja2.ChoiceLoader([jinja2.DictLoader(own), *filter(None, [env.loader])]))
        return (env.get_template("rt.h.j2").render(rctx), env.get_template("rt.c.j2").render(rctx))

    def manifest(self) -> dict[str, Any]:
        pipe = self.pipe

        def fl(fields: list[Field]) -> list[list[Any]]:
            return [[f.name, f.ctype, list(f.shape)] for f in fields]

        return {
            "estimator": pipe.options.estimator.name,
            "estimator_options": dict(pipe.options.estimator.params),
            "observer": pipe.options.observer,
            "controller": pipe.options.controller,
            "constant_params": pipe.options.constant_params,
            "label": pipe.options.label,
            "sample_period": pipe.ctx.ts,
            "blocks": [
                {
                    "kind": b.kind,
                    "name": b.name,
                    "config": fl(b.config),
                    "state": fl(b.state),
                    "ranges": {
                        f.name: {"low": f.low, "high": f.high, "low_open": f.low_open, "choices": list(f.choices)}
                        | ({"unused": list(f.unused), "unused_why": f.unused_why} if f.unused else {})
                        for f in b.config
                    },
                    "options": {k: (list(v) if isinstance(v, tuple) else v) for k, v in b.options.items()},
                }
                for b in pipe.blocks
            ],
            "inputs": fl(pipe.inputs),
            "outputs": fl(pipe.outputs),
            "config_layout": layout_id(self.config_blocks(), self.precision),
            "default_config": {
                f"{b.kind}.{f.name}": np.asarray(f.default_array(), float).ravel().tolist()
                for b in pipe.blocks
                for f in b.config
            },
            "ops": dict(sorted(self.ops.items())),
        }


def pipeline_files(emitter: RtEmitter, env: jinja2.Environment, ctx: dict[str, Any]) -> dict[str, str]:
    """``<robot>_rt.{h,c}`` of the emitter's pipeline (the header with its paper references)."""
    rt_h, rt_c = emitter.render(env, ctx)
    return {f"{emitter.p}_rt.h": with_references(rt_h), f"{emitter.p}_rt.c": rt_c}

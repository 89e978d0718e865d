"""The host-only files of a generated folder (``<robot>/host/``): never compiled for the target.

``<robot>_host.h`` includes every header the host binds and declares the host glue (the vectorised
``_rt_run``); the cffi declarations are this header, preprocessed (host_tools.bindings.build), so
the C interface is written once, in the templates."""

from __future__ import annotations

from collections.abc import Mapping

import jinja2

HOST_FOLDER = "host"


def host_glue(env: jinja2.Environment, ctx: Mapping[str, object], headers: list[str], run: bool) -> dict[str, str]:
    """``<p>_host.{h,c}``: ``headers`` (in include order) and, with ``run``, the pipeline's run loop."""
    p = ctx["p"]
    view = dict(ctx, headers=headers, run=run)
    return {
        f"{p}_host.h": env.get_template("host.h.j2").render(view),
        f"{p}_host.c": env.get_template("host.c.j2").render(view),
    }

"""The jinja2 environment over templates/ (structure only: the arithmetic comes from cprint)."""

from __future__ import annotations

import jinja2

from codegen.resources import resource_dir


def template_environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )

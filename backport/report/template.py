"""The PR body template rendered with Jinja2, sandboxed: the packaged one or a project's own.

Imported only where a body is rendered (`report/body.py` `render_fresh`): a command that
writes no PR body (`status`, `abort`, a run that opens no PR) never loads Jinja2.
"""

from __future__ import annotations

import functools
import traceback
from pathlib import Path

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from backport.errors import BackportError
from backport.report.untrusted import untrusted


@functools.lru_cache(maxsize=8)
def _environment(search_dir: str | None) -> SandboxedEnvironment:
    loader: jinja2.BaseLoader
    if search_dir is None:
        loader = jinja2.PackageLoader("backport.report", "templates")
    else:
        loader = jinja2.FileSystemLoader(search_dir)
    env = SandboxedEnvironment(
        loader=loader, autoescape=False, undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
    )
    # `{{ value | untrusted("span") }}`; `inert`, its old name, for templates written before
    env.filters["untrusted"] = env.filters["inert"] = _untrusted_filter
    return env


def _untrusted_filter(text: object, where: str = "prose") -> str:
    if where not in ("prose", "cell", "code", "span", "cell-span"):
        raise jinja2.TemplateRuntimeError(f"untrusted: unknown place {where!r}")
    return untrusted(text, where=where)  # type: ignore[arg-type]


def render_template(name: str, variables: dict, *, search_dir: Path | None = None) -> str:
    """Render template ``name`` (packaged, or from ``search_dir``); errors are BackportError."""
    env = _environment(str(search_dir) if search_dir is not None else None)
    shown = str(search_dir / name) if search_dir is not None else f"backport/report/templates/{name}"
    try:
        template = env.get_template(name)
        return template.render(**variables)
    except jinja2.TemplateSyntaxError as exc:
        raise BackportError("config", f"PR body template {shown} line {exc.lineno}: {exc.message}.") from exc
    except jinja2.TemplateNotFound as exc:
        raise BackportError("config", f"PR body template {shown} was not found.") from exc
    except jinja2.TemplateError as exc:
        line = _template_line(exc, name)
        where = f" line {line}" if line else ""
        raise BackportError("config", f"PR body template {shown}{where}: {exc.message}.") from exc


def _template_line(exc: BaseException, name: str) -> int | None:
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).name == name:
            line = frame.lineno
    return line

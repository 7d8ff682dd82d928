"""Page templates: Jinja2 with autoescape, in the configured language.

Templates live in ``lib/vykhukhol/templates/``; a service may override any
public page by putting a file of the same name in its folder's ``pages/``.
Every template gets ``t(key, **values)`` for its sentences and ``lang``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import jinja2
from markupsafe import Markup, escape

from vykhukhol.i18n import t
from vykhukhol.web.response import Response

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


@lru_cache(maxsize=16)
def _environment(override: str | None) -> jinja2.Environment:
    loaders: list[jinja2.BaseLoader] = []
    if override:
        loaders.append(jinja2.FileSystemLoader(override))
    loaders.append(jinja2.FileSystemLoader(str(TEMPLATES)))
    env = jinja2.Environment(loader=jinja2.ChoiceLoader(loaders), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["code"] = code_spans
    return env


_BACKTICKS = re.compile(r"`([^`<>]+)`")


def code_spans(text: object) -> Markup:
    """``text`` escaped, with each `command` in backticks shown as <code> (the
    sentences name commands to type; backticks are how they are written)."""
    return Markup(_BACKTICKS.sub(r"<code>\1</code>", str(escape(text))))


def render(template_name: str, lang: str, status: int = 200, override: Path | None = None,
           **context: object) -> Response:
    env = _environment(str(override) if override and override.is_dir() else None)
    template = env.get_template(template_name)
    body = template.render(lang=lang, t=lambda key, /, **kw: t(lang, key, **kw), **context)
    return Response(body, status)


def render_error(status: int, lang: str, detail: str = "") -> Response:
    """The page for an error: its general sentence, and the particular one
    (``detail``) when the error carries it — never for a 500."""
    key = f"error.{status}" if f"error.{status}" in _error_keys() else "error.500"
    if "{detail}" in _raw(key, lang):
        return render("message.html", lang, status, title=t(lang, "error.title"),
                      text=t(lang, key, detail=detail))
    shown = detail if status < 500 and detail and detail != _raw(key, "en") else ""
    return render("message.html", lang, status, title=t(lang, "error.title"),
                  text=t(lang, key), detail=shown)


def _error_keys() -> set[str]:
    from vykhukhol.i18n import MESSAGES

    return {k for k in MESSAGES if k.startswith("error.")}


def _raw(key: str, lang: str) -> str:
    from vykhukhol.i18n import MESSAGES, tr

    return tr(lang, MESSAGES[key])

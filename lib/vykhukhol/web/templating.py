"""Page templates: Jinja2 with autoescape, in the configured language.

Templates live in ``lib/vykhukhol/templates/``; a service may override any
public page by putting a file of the same name in its folder's ``pages/``.
Every template gets ``t(key, **values)`` for its sentences and ``lang``.

The public pages that nobody overrides, and the subscriber's own page, are
drawn by their plain-Python form (:mod:`vykhukhol.web.plain_templates`,
generated from the templates by tools/plain_templates.py) instead: a CGI
process then never imports Jinja2. A service whose ``pages/`` holds the page or ``base.html``
pays for it.
"""

from __future__ import annotations

import os

from vykhukhol.i18n import t
from vykhukhol.web.response import Response

TEMPLATES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates")


_ENVIRONMENTS: dict[str | None, object] = {}  # override → its Environment (functools costs a page)


def _environment(override: str | None):  # -> jinja2.Environment
    """The Environment of ``override`` (a service's pages/ folder), made once."""
    if override not in _ENVIRONMENTS:
        if len(_ENVIRONMENTS) >= 16:
            _ENVIRONMENTS.clear()
        _ENVIRONMENTS[override] = _new_environment(override)
    return _ENVIRONMENTS[override]


_environment.cache_clear = _ENVIRONMENTS.clear  # type: ignore[attr-defined]  # as lru_cache's


def _new_environment(override: str | None):  # -> jinja2.Environment
    import jinja2  # only for the admin's pages and a service's own templates

    loaders: list[jinja2.BaseLoader] = []
    if override:
        loaders.append(jinja2.FileSystemLoader(override))
    loaders.append(jinja2.FileSystemLoader(TEMPLATES))
    env = jinja2.Environment(loader=jinja2.ChoiceLoader(loaders), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["code"] = code_spans
    return env


def code_spans(text: object):  # -> markupsafe.Markup
    """``text`` escaped, with each `command` in backticks shown as <code> (the
    sentences name commands to type; backticks are how they are written)."""
    import re

    from markupsafe import Markup, escape

    return Markup(re.sub(r"`([^`<>]+)`", r"<code>\1</code>", str(escape(text))))


def render(template_name: str, lang: str, status: int = 200,
           override: str | os.PathLike | None = None, **context: object) -> Response:
    """``template_name`` drawn in ``lang``; ``override`` is a service's pages/ folder."""
    def text(key: str, /, **kw: object) -> str:
        return t(lang, key, **kw)

    folder = str(override) if override and os.path.isdir(override) else None
    plain = _plain(template_name, folder)
    if plain is not None:
        return Response(plain(lang, text, context), status)
    template = _environment(folder).get_template(template_name)
    return Response(template.render(lang=lang, t=text, **context), status)


def _plain(template_name: str, folder: str | None):
    """The plain-Python form of ``template_name``, unless there is none, the
    service's folder overrides the page or the base it extends, or the
    template was edited since the plain form was written from it."""
    from vykhukhol.web import plain_templates

    page = plain_templates.PAGES.get(template_name) or plain_templates.OWN_PAGES.get(template_name)
    if page is None or folder is not None and any(
            os.path.exists(os.path.join(folder, name)) for name in (template_name, "base.html")):
        return None
    return page if plain_templates.current(template_name) else None


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

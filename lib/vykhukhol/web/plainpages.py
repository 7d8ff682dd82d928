"""The four public templates (base, subscribe, message, button) written out as
plain Python, so a CGI process that shows one of them does not import Jinja2
(about 60 ms of a ~20 ms interpreter start; issue 20).

The templates in ``lib/vykhukhol/templates/`` stay the source: a service's
``pages/`` folder overrides them through Jinja2 (:mod:`vykhukhol.web.pages`),
and tests/unit/test_plainpages.py renders every page both ways, with hostile
values, and fails unless the two agree byte for byte. Change a template and
its function here together.

Every value is escaped as Jinja2's autoescape does (markupsafe: ``& < > ' "``),
so the output, and its safety, is the same as the template's.

Each function is used only while its template and base.html are the ones it
was written from (their CRC-32 in :data:`SOURCES`): a site that edits
``lib/vykhukhol/templates/`` by hand gets its edit, drawn by Jinja2.
"""

from __future__ import annotations

import os
from collections.abc import Callable

TEMPLATES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates")

#: CRC-32 of each template this module was written from (tests/unit/test_plainpages.py
#: fails when a template and this table differ: change the function, then the number).
SOURCES = {"base.html": 0x6867500C, "subscribe.html": 0x12568E43, "message.html": 0xE77398F5,
           "button.html": 0x7318D7EF}
_checked: dict[str, bool] = {}

_HEAD = """<!doctype html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>"""
_STYLE = """</title>
<style>
body { font: 16px/1.5 system-ui, sans-serif; max-width: 34rem; margin: 3rem auto; padding: 0 1rem; color: #222; }
h1 { font-size: 1.5rem; }
label { display: block; margin: 1rem 0 .25rem; }
input[type=email], input[type=text] { width: 100%; padding: .5rem; font-size: 1rem; box-sizing: border-box; }
button { margin-top: 1rem; padding: .6rem 1.2rem; font-size: 1rem; cursor: pointer; }
.error { color: #a00; }
.trap { position: absolute; left: -10000px; width: 1px; height: 1px; overflow: hidden; }
</style>
</head>
<body>
<main>
"""
_TAIL = """</main>
</body>
</html>"""


def escape(value: object) -> str:
    """``value`` as HTML text, exactly as markupsafe escapes it (the templates'
    autoescape): the five characters that can end a text or an attribute."""
    return (str(value).replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;")
            .replace("'", "&#39;").replace('"', "&#34;"))


def _base(lang: str, title: str, body: str) -> str:
    """base.html: ``title`` already escaped, ``body`` already HTML."""
    return _HEAD.replace("{lang}", escape(lang), 1) + title + _STYLE + body + _TAIL


def message(lang: str, t: Callable[..., str], context: dict) -> str:
    """message.html: title, text and, when given, a detail."""
    title = escape(context.get("title", ""))
    body = f"<h1>{title}</h1>\n<p>{escape(context.get('text', ''))}</p>\n"
    if context.get("detail"):
        body += f"<p>{escape(context['detail'])}</p>"
    return _base(lang, title, body)


def button(lang: str, t: Callable[..., str], context: dict) -> str:
    """button.html: a sentence and one button that posts the link's fields back (and,
    on the unsubscribe page, the link to the subscriber's own page)."""
    e = {key: escape(context.get(key, "")) for key in
         ("title", "text", "action", "s", "e", "token", "button", "n")}
    job = f"  <input type=\"hidden\" name=\"n\" value=\"{e['n']}\">\n" if context.get("n") else ""
    body = (f"<h1>{e['title']}</h1>\n<p>{e['text']}</p>\n"
            f"<form method=\"post\" action=\"{e['action']}\">\n"
            f"  <input type=\"hidden\" name=\"s\" value=\"{e['s']}\">\n"
            f"  <input type=\"hidden\" name=\"e\" value=\"{e['e']}\">\n"
            f"  <input type=\"hidden\" name=\"t\" value=\"{e['token']}\">\n"
            f"{job}  <button type=\"submit\">{e['button']}</button>\n"
            "</form>\n")
    if context.get("manage_url"):  # the unsubscribe page's way to every other list
        body += (f"<p><a href=\"{escape(context['manage_url'])}\">"
                 f"{escape(context.get('manage_text', ''))}</a></p>")
    return _base(lang, e["title"], body)


def subscribe(lang: str, t: Callable[..., str], context: dict) -> str:
    """subscribe.html: the form, with the error of the last try when there is one."""
    service = context["service"]
    title = escape(t("subscribe.title", service=service.title))
    error = context.get("error")
    body = (f"<h1>{title}</h1>\n"
            + (f"<p class=\"error\" role=\"alert\">{escape(error)}</p>" if error else "")
            + "<form method=\"post\" action=\"subscribe.py\">\n"
            f"  <input type=\"hidden\" name=\"service\" value=\"{escape(service.name)}\">\n"
            f"  <label for=\"email\">{escape(t('subscribe.email'))}</label>\n"
            f"  <input type=\"email\" id=\"email\" name=\"email\" value=\"{escape(context.get('email', ''))}\""
            " required maxlength=\"254\" autocomplete=\"email\">\n"
            f"  <label for=\"name\">{escape(t('subscribe.name'))}</label>\n"
            f"  <input type=\"text\" id=\"name\" name=\"name\" value=\"{escape(context.get('name', ''))}\""
            " maxlength=\"100\" autocomplete=\"name\">\n"
            "  <div class=\"trap\" aria-hidden=\"true\">\n"
            f"    <label for=\"website\">{escape(t('subscribe.honeypot'))}</label>\n"
            "    <input type=\"text\" id=\"website\" name=\"website\" value=\"\" tabindex=\"-1\""
            " autocomplete=\"off\">\n"
            "  </div>\n"
            f"  <button type=\"submit\">{escape(t('subscribe.button'))}</button>\n"
            "</form>\n")
    return _base(lang, title, body)


#: template name → its plain form
PAGES: dict[str, Callable[[str, Callable[..., str], dict], str]] = {
    "message.html": message, "button.html": button, "subscribe.html": subscribe,
}


def current(template_name: str) -> bool:
    """Whether ``template_name`` and base.html are still the files :data:`SOURCES`
    describes (read once per process; a template that cannot be read is not)."""
    import binascii  # zlib.crc32 by another name; base64 has it loaded already

    for name in (template_name, "base.html"):
        if name not in _checked:
            try:
                with open(os.path.join(TEMPLATES, name), "rb") as source:
                    _checked[name] = binascii.crc32(source.read()) == SOURCES.get(name)
            except OSError:
                _checked[name] = False
        if not _checked[name]:
            return False
    return True

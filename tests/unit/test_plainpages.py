"""The public templates' plain-Python form (web/plainpages.py) draws exactly what
the Jinja2 templates in lib/vykhukhol/templates/ draw, for every page, both
languages and hostile values; and a service's own template still wins."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest
from markupsafe import escape as markup_escape

from vykhukhol.i18n import t
from vykhukhol.web import pages, plainpages

HOSTILE = ["", "plain", "<script>alert('x')</script>", "a\"b'c&d<e>f", "&amp; &#39; {{ 1 }}",
           "Выхухоль «кавычки»", "line\nbreak", "x" * 300]


def jinja(name: str, lang: str, context: dict) -> str:
    template = pages._environment(None).get_template(name)
    return template.render(lang=lang, t=lambda key, /, **kw: t(lang, key, **kw), **context)


def plain(name: str, lang: str, context: dict) -> str:
    return plainpages.PAGES[name](lang, lambda key, /, **kw: t(lang, key, **kw), context)


def contexts(name: str):
    for value, other in itertools.product(HOSTILE, HOSTILE[:4]):
        if name == "message.html":
            yield {"title": value, "text": other}
            yield {"title": other, "text": value, "detail": value}
        elif name == "button.html":
            yield {"title": value, "text": other, "button": value, "action": other,
                   "s": value, "e": other, "token": value}
            yield {"title": value, "text": other, "button": value, "action": other,
                   "s": value, "e": other, "token": value, "n": other}  # a newsletter's link
            yield {"title": other, "text": value, "button": other, "action": value,  # unsubscribe
                   "s": other, "e": value, "token": other, "manage_url": value,
                   "manage_text": other}
        else:
            service = SimpleNamespace(title=value, name=other)
            yield {"service": service, "email": value, "name": other}
            yield {"service": service, "email": other, "name": value, "error": value}


@pytest.mark.parametrize("lang", ["en", "ru"])
@pytest.mark.parametrize("name", sorted(plainpages.PAGES))
def test_plain_form_agrees_with_the_template(name, lang):
    for context in contexts(name):
        assert plain(name, lang, context) == jinja(name, lang, context), context


def test_every_public_template_has_its_plain_form():
    assert set(plainpages.PAGES) == {"message.html", "button.html", "subscribe.html"}


def test_escape_is_markupsafes_for_every_dangerous_character():
    for value in HOSTILE + ["<>&'\"", 42, None]:
        assert plainpages.escape(value) == str(markup_escape(value))
    assert not set("<>'\"") & set(plainpages.escape("<>'\"&"))


def test_no_value_reaches_the_page_unescaped():
    body = plain("button.html", "en", {k: "<b x='1'>" for k in
                                       ("title", "text", "button", "action", "s", "e", "token")})
    assert "<b x" not in body and "'1'" not in body and body.count("&lt;b x=&#39;1&#39;&gt;") == 8  # title twice
    body = plain("button.html", "en", {k: "<b x='1'>" for k in
                                       ("title", "text", "button", "action", "s", "e", "token",
                                        "manage_url", "manage_text")})
    assert "<b x" not in body and body.count("&lt;b x=&#39;1&#39;&gt;") == 10


def test_a_service_template_is_drawn_by_jinja(tmp_path):
    (tmp_path / "message.html").write_text("own {{ title }}|{{ t('error.title') }}", encoding="utf-8")
    response = pages.render("message.html", "en", 200, tmp_path, title="<T>", text="x")
    assert response.body == "own &lt;T&gt;|Error"
    # another page of the same service still comes from our templates
    assert "<h1>A</h1>" in pages.render("button.html", "en", 200, tmp_path, title="A").body


def test_a_service_base_is_drawn_by_jinja(tmp_path):
    (tmp_path / "base.html").write_text("base[{% block body %}{% endblock %}]", encoding="utf-8")
    body = pages.render("message.html", "en", 200, tmp_path, title="A", text="B").body
    assert body == "base[<h1>A</h1>\n<p>B</p>\n]"


def test_the_plain_forms_were_written_from_these_templates():
    """A template changed without its plain form: change the function in
    web/plainpages.py to match (the agreement test above), then its CRC."""
    import zlib

    for name, crc in plainpages.SOURCES.items():
        with open(f"{plainpages.TEMPLATES}/{name}", "rb") as source:
            assert zlib.crc32(source.read()) == crc, name


def test_an_edited_template_is_drawn_by_jinja(monkeypatch, tmp_path):
    for name in plainpages.SOURCES:
        (tmp_path / name).write_bytes(open(f"{plainpages.TEMPLATES}/{name}", "rb").read())
    (tmp_path / "message.html").write_text("edited {{ title }}", encoding="utf-8")
    monkeypatch.setattr(plainpages, "TEMPLATES", str(tmp_path))
    monkeypatch.setattr(plainpages, "_checked", {})
    assert not plainpages.current("message.html") and plainpages.current("button.html")
    monkeypatch.setattr(pages, "TEMPLATES", str(tmp_path))
    pages._environment.cache_clear()
    try:
        assert pages.render("message.html", "en", title="<T>").body == "edited &lt;T&gt;"
    finally:
        pages._environment.cache_clear()


def test_the_pages_use_the_plain_forms(monkeypatch):
    called = []
    monkeypatch.setitem(plainpages.PAGES, "message.html",
                        lambda lang, t, context: called.append(context) or "plain")
    assert pages.render("message.html", "en", title="x").body == "plain" and called

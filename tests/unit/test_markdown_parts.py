"""A Markdown letter made into its two templates (vykhukhol.render.markdown):
no link to a dangerous scheme, no raw HTML, template tags kept whole, values
filled in afterwards and escaped, braces of the Markdown's own never a tag.
(tests/integration/test_markdown_letters.py sends such letters.)"""

from __future__ import annotations

import re

import pytest
from markupsafe import Markup

from vykhukhol import render
from vykhukhol.errors import BadInput
from vykhukhol.render.markdown import parts

NAME = '<b>x</b> *y* [z](https://evil.example/) {{ 7*7 }}'


def made(source: str, **values: str) -> tuple[str, str]:
    """The text and HTML parts of ``source`` rendered for ``values``."""
    text, html = parts(source)
    context = {**render.SAMPLE_CONTEXT, **values}
    return (render.render(text, {**context, "footer": "FOOT"}),
            render.render_html(html, {**context, "footer": Markup("<div>FOOT</div>")}))


@pytest.mark.parametrize("url", [
    "javascript:alert(1)", "JavaScript:alert(1)", "vbscript:msgbox(1)", "data:text/html,x",
    "data:image/png;base64,iVBORw0KGgo=", "file:///etc/passwd", "java%73cript:alert(1)"])
def test_a_link_or_image_to_a_dangerous_scheme_stays_text(url):
    for source in (f"[go]({url})", f"![img]({url})", f"<{url}>"):
        _, html = parts(source)
        addresses = re.findall(r'(?:href|src)="([^"]*)"', html)
        assert all(not re.match(r"(?i)(javascript|vbscript|data|file):", a) for a in addresses), html
        assert "<a " not in html or url.startswith("java%73"), html


def test_raw_html_is_shown_as_text():
    _, html = parts("<script>alert(1)</script>\n\nA <b onclick=x>bold</b> word.\n\n<div>\nblock\n</div>")
    assert "<script" not in html and "<b " not in html and "<div" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_value_is_never_markup_in_either_part():
    text, html = made("Hello {{ name }}, *you*.\n\n- {{ name }}\n\n[Leave]({{ unsubscribe_url }})",
                      name=NAME)
    assert "Hello &lt;b&gt;x&lt;/b&gt; *y* [z](https://evil.example/) {{ 7*7 }}, <em>you</em>." in html
    assert 'href="https://evil.example/' not in html and "49" not in html
    assert f"Hello {NAME}, you." in text and f"- {NAME}" in text
    assert f'<a href="{render.SAMPLE_CONTEXT["unsubscribe_url"].replace("&", "&amp;")}">Leave</a>' in html
    assert f"Leave ({render.SAMPLE_CONTEXT['unsubscribe_url']})" in text


def test_the_text_part_reads_as_plain_text():
    text, _ = made("# Title\n\nSome *em* and **strong** and `code`.\n\n"
                   "1. one\n2. two\n   - inner\n\n> said\n> twice\n\n"
                   "[site](https://example.org/a) <https://example.org/b> ![logo](https://example.org/l.png)\n\n"
                   "```\nkept  as *is*\n```")
    assert text == ("Title\n\nSome em and strong and code.\n\n"
                    "1. one\n2. two\n   - inner\n\n> said\n> twice\n\n"
                    "site (https://example.org/a) https://example.org/b logo (https://example.org/l.png)\n\n"
                    "kept  as *is*\n")


def test_statements_and_the_footer_stand_apart_from_the_markdown():
    text, html = made("Items:\n\n{% for i in [1, 2] %}\n- item {{ i }}\n{% endfor %}\n\n{{ footer }}\n")
    assert html.count("<ul>") == 2 and html.count("</ul>") == 2
    assert "<p><div>FOOT</div></p>" not in html and html.rstrip().endswith("<div>FOOT</div>")
    assert "- item 1\n\n- item 2" in text and text.rstrip().endswith("FOOT")


def test_a_brace_the_markdown_makes_is_no_template_tag():
    text, html = made("\\{\\{ name }} and &#123;&#123; name }} and &#123;% if x %}")
    assert "Ivan" not in text + html
    assert "{{ name }} and {{ name }} and {% if x %}" in text
    assert "&#123;&#123; name }} and &#123;&#123; name }} and &#123;% if x %}" in html


@pytest.mark.parametrize("source", [
    "[x]({{ name }})", "[x](java{{ '' }}script:alert(1))", "![x]({{ email }})",
    "[x]({% if name %}https://example.org/{% else %}javascript:alert(1){% endif %})",
    "[x](page{{ name }}.html)"])
def test_a_link_whose_scheme_a_template_tag_could_choose_is_refused(source):
    with pytest.raises(BadInput, match="must begin with its scheme"):
        parts(source)


def test_a_link_may_begin_with_the_projects_own_links_or_put_values_after_its_scheme():
    text, html = made("[Leave]({{ unsubscribe_url }}) [Me]({{- manage_url -}}) "
                      "![see]({{ web_url }}) [q](https://example.org/?n={{ name }}) "
                      "[w](mailto:{{ email }})", name="a&b")
    assert 'href="https://example.org/?n=a&amp;b"' in html
    assert 'href="mailto:ivan@example.org"' in html and "w (mailto:ivan@example.org)" in text

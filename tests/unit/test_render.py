"""Letter templates (vykhukhol.render): the sandbox, lenient variables, error sentences."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vykhukhol.errors import BadInput
from vykhukhol.render import check_template, render, render_html

CONTEXT = {
    "name": "Иван",
    "email": "ivan@example.org",
    "service": "Новости",
    "unsubscribe_url": "https://example.org/cgi/unsubscribe.py?s=news&e=ivan%40example.org&t=ab",
    "date": "2026-11-29",
}


# --- syntax errors ------------------------------------------------------------


def test_a_syntax_error_names_what_the_line_and_the_reason() -> None:
    with pytest.raises(BadInput) as caught:
        check_template("Hello,\n{{ name }\n", "text")
    assert caught.value.message == "text: line 2: unexpected '}'"


def test_an_unclosed_block_says_which_tag_is_missing() -> None:
    with pytest.raises(BadInput) as caught:
        check_template("Hello\n{% if name %}\n{{ name }}\n", "HTML")
    message = caught.value.message
    assert message.startswith("HTML: line ")
    assert "endif" in message


def test_an_unknown_filter_is_a_syntax_error_on_its_line() -> None:
    with pytest.raises(BadInput, match=r"^subject: line 3: No filter named 'shout'"):
        check_template("a\nb\n{{ name | shout }}", "subject")


def test_render_reports_a_syntax_error_the_same_way_as_check_template() -> None:
    with pytest.raises(BadInput, match=r"^text: line 1: "):
        render("{% for %}", CONTEXT, "text")


def test_a_valid_template_passes_the_check() -> None:
    check_template("Hello{% if name %} {{ name }}{% endif %}!\n{{ unsubscribe_url }}\n")


# --- the sandbox ----------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ ''.__class__ }}",
        "{{ name.__class__.__base__.__subclasses__() }}",
        "{{ lipsum.__globals__ }}",
        "{{ cycler.__init__.__globals__ }}",
        "{{ nothing_here.__class__ }}",
        "{{ name|attr('__class__') }}",
    ],
)
def test_the_sandbox_refuses_python_internals(source: str) -> None:
    with pytest.raises(BadInput) as caught:
        render("Dear reader,\n" + source, CONTEXT, "text")
    assert caught.value.message.startswith("text: line 2: ")
    assert "unsafe" in caught.value.message


def test_the_sandbox_refuses_changing_the_context() -> None:
    with pytest.raises(BadInput, match="unsafe"):
        render("{{ items.append(1) }}", {"items": []}, "text")


def test_the_sandbox_refuses_to_build_a_huge_string() -> None:
    with pytest.raises(BadInput, match=r"^text: line 1: a value would be longer than 1000000 char"):
        render("{{ 'x' * 1000000000 }}", CONTEXT, "text")


def test_the_sandbox_refuses_a_huge_range() -> None:
    with pytest.raises(BadInput, match=r"range\(\) of more than 100000 numbers"):
        render("{% for i in range(10**9) %}{% endfor %}", CONTEXT, "text")


def test_a_modest_repetition_is_allowed() -> None:
    assert render("{{ '-' * 10 }}", CONTEXT) == "----------"


def test_a_runtime_error_names_its_line_and_kind() -> None:
    with pytest.raises(BadInput) as caught:
        render("one\ntwo\n{{ 1 / 0 }}", CONTEXT, "text")
    assert caught.value.message == "text: line 3: ZeroDivisionError: division by zero"


# --- variables ------------------------------------------------------------------


def test_an_undefined_variable_renders_as_nothing() -> None:
    assert render("Hello {{ nmae }}!", CONTEXT) == "Hello !"


def test_attributes_of_undefined_variables_render_as_nothing() -> None:
    assert render("[{{ user.profile.city }}]", CONTEXT) == "[]"


def test_a_loop_over_an_undefined_variable_runs_zero_times() -> None:
    assert render("[{% for x in nothing %}{{ x }}{% endfor %}]", CONTEXT) == "[]"


def test_an_undefined_variable_is_false_in_a_condition() -> None:
    assert render("{% if nmae %}yes{% else %}no{% endif %}", CONTEXT) == "no"


def test_the_project_context_renders_with_cyrillic_intact() -> None:
    text = render(
        "Здравствуйте, {{ name }}!\nРассылка «{{ service }}» от {{ date }}.\n"
        "Отписаться: {{ unsubscribe_url }}\n",
        CONTEXT,
    )
    assert text == (
        "Здравствуйте, Иван!\nРассылка «Новости» от 2026-11-29.\n"
        f"Отписаться: {CONTEXT['unsubscribe_url']}\n"
    )


def test_a_trailing_newline_of_the_template_is_kept() -> None:
    assert render("Hi {{ name }}\n", CONTEXT) == "Hi Иван\n"


# --- escaping -------------------------------------------------------------------


def test_html_escapes_a_script_in_the_name() -> None:
    context = {**CONTEXT, "name": "<script>alert('x')</script>"}
    html = render_html("<p>Hello, {{ name }}!</p>", context)
    assert "<script>" not in html
    assert html == "<p>Hello, &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;!</p>"


def test_html_escapes_the_ampersands_of_a_link_in_an_attribute() -> None:
    html = render_html('<a href="{{ unsubscribe_url }}">x</a>', CONTEXT)
    assert (
        'href="https://example.org/cgi/unsubscribe.py?s=news&amp;e=ivan%40example.org&amp;t=ab"'
        in html
    )


def test_plain_text_is_not_escaped() -> None:
    context = {**CONTEXT, "name": "Tom & <Jerry>"}
    assert render("Hello, {{ name }}!", context) == "Hello, Tom & <Jerry>!"


def test_the_same_source_renders_as_text_and_as_html_independently() -> None:
    source = "{{ name }}"
    context = {"name": "a<b"}
    assert render_html(source, context) == "a&lt;b"
    assert render(source, context) == "a<b"
    assert render_html(source, context) == "a&lt;b"


@given(st.text().filter(lambda s: "{" not in s))
def test_text_without_braces_renders_unchanged_but_for_line_ends(text: str) -> None:
    assert render(text, CONTEXT) == text.replace("\r\n", "\n").replace("\r", "\n")

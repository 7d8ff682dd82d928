"""Letter templates (vykhukhol.render): the sandbox, its time and size bounds,
lenient variables, error sentences."""

from __future__ import annotations

import re
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vykhukhol.errors import BadInput, OverBudget
from vykhukhol.render import TIME_BUDGET, Budget, check_template, render, render_html

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


# --- the budget: every render is bounded in time and size (docs/reference/security.md#security-templates)
# Each attack below is small enough to run in about a second without the
# bounds, so a test fails (instead of hanging) on code without them.

def over_budget(source: str, html: bool = False, budget: Budget | None = None) -> tuple[str, float]:
    """The OverBudget message ``source`` ends in, and the seconds it took."""
    began = time.monotonic()
    with pytest.raises(OverBudget) as caught:
        (render_html if html else render)(source, CONTEXT, "text", budget)
    return caught.value.message, time.monotonic() - began


SLOW = {
    "nested loops": "{% for i in range(3000) %}{% for j in range(3000) %}{% endfor %}{% endfor %}",
    "loops over strings": "{% for i in 'a' * 3000 %}{% for j in 'a' * 3000 %}{% endfor %}{% endfor %}",
    "a loop that uses loop": "{% for i in range(3000) %}{% for j in range(3000) %}"
                             "{{ loop.index if false }}{% endfor %}{% endfor %}",
    "recursive macros": "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}"
                        "{% endmacro %}{{ f(21) }}",
    "a recursive loop": "{% for x in range(2000) recursive %}{% if loop.depth < 2 %}"
                        "{{ loop(range(2000)) }}{% endif %}{% endfor %}",
    "a quadratic sum": "{{ ([[1]] * 30000)|sum(start=[])|length }}",
}


@pytest.mark.parametrize("source", SLOW.values(), ids=SLOW.keys())
def test_a_slow_template_stops_when_its_half_second_is_spent(source: str) -> None:
    message, seconds = over_budget(source)
    assert "took longer than 0.5 s to render" in message
    assert seconds < TIME_BUDGET + 0.5


BIG = {
    "doubling with ~": "{% set a = 'a' * 100000 %}" + "{% set a = a ~ a %}" * 4 + "{{ a|length }}",
    "doubling in a loop": "{% set ns = namespace(a='a' * 100000) %}{% for i in range(5) %}"
                          "{% set ns.a = ns.a ~ ns.a %}{% endfor %}{{ ns.a|length }}",
    "doubling with +": "{% set a = 'a' * 100000 %}" + "{% set a = a + a %}" * 4 + "{{ a|length }}",
    "center": '{{ "a"|center(2 * 10**6) }}',
    "a centred literal": '{{ "a"|center(2000000) }}',
    "str.ljust": '{{ "a".ljust(2 * 10**6)|length }}',
    "str.format width": '{{ "{:>2000000}".format(1)|length }}',
    "a nested format width": '{{ "{:>{}}".format(1, 2 * 10**6)|length }}',
    "str.format fields": '{% set a = "a" * 500000 %}{{ "{0}{0}{0}".format(a)|length }}',
    "% width": '{{ ("%2000000s" % 1)|length }}',
    "% star width": '{{ ("%*s" % (2 * 10**6, 1))|length }}',
    "the format filter": '{{ "%2000000s"|format(1)|length }}',
    "lipsum": "{{ lipsum(200)|length }}",
    "a tower of powers": "{{ (((10**100)**100)**100)**100 }}",
    "squaring in a loop": "{% set ns = namespace(n=2) %}{% for i in range(20) %}"
                          "{% set ns.n = ns.n * ns.n %}{% endfor %}{{ ns.n > 0 }}",
    "join": "{% set a = 'a' * 300000 %}{{ ([a] * 4)|join|length }}",
    "str.join": "{% set a = 'a' * 300000 %}{{ ''.join([a] * 4)|length }}",
    "nested lists printed": "{% set a = 'a' * 100000 %}{% set b = [a, a, a, a, a, a, a, a, a, a] %}"
                            "{% set c = [b, b] %}{{ c|length }}{{ c }}",
    "replace": "{{ ('a' * 1000).replace('a', 'b' * 3000)|length }}",
    "the replace filter": "{{ ('a' * 1000)|replace('a', 'b' * 3000)|length }}",
    "indent": "{{ ('a\\n' * 1000)|indent(3000)|length }}",
    "wordwrap": "{{ ('a ' * 1000)|wordwrap(1, wrapstring='x' * 3000)|length }}",
    "int.to_bytes": "{{ (1).to_bytes(2000000, 'big')|length }}",
    "batch": "{{ ([1]|batch(2000000, 'x')|list)|length }}",
}


@pytest.mark.parametrize("source", BIG.values(), ids=BIG.keys())
def test_a_value_too_big_is_refused_before_it_is_built(source: str) -> None:
    message, _ = over_budget(source)
    assert re.search(r"(longer than 1000000 characters|more than 3000 digits|"
                     r"more than 10000 words)", message), message


def test_the_output_of_a_part_is_capped_at_a_million_characters() -> None:
    message, _ = over_budget("{% set a = 'a' * 100000 %}{% for i in range(11) %}{{ a }}{% endfor %}")
    assert "would write more than 1000000 characters" in message


def test_output_captured_by_a_set_block_is_capped_too() -> None:
    message, _ = over_budget("{% set a = 'a' * 100000 %}{% set b %}{% for i in range(11) %}"
                             "{{ a }}{% endfor %}{% endset %}{{ b|length }}")
    assert "would write more than 1000000 characters" in message


def test_concatenation_in_html_is_bounded_as_in_text() -> None:
    message, _ = over_budget("{% set a = 'a' * 100000 %}" + "{% set a = a ~ a %}" * 4 + "{{ a }}",
                             html=True)
    assert "longer than 1000000 characters" in message


def test_a_letter_s_parts_share_one_budget() -> None:
    budget = Budget()
    over_budget(SLOW["nested loops"], budget=budget)
    began = time.monotonic()
    with pytest.raises(OverBudget):  # the next part of the same letter has no time left
        render("Hello {{ name }}", CONTEXT, "subject", budget)
    assert time.monotonic() - began < 0.1


def test_parallel_renders_each_keep_their_own_budget() -> None:
    results: list[float] = []

    def slow() -> None:
        results.append(over_budget(SLOW["nested loops"])[1])

    threads = [threading.Thread(target=slow) for _ in range(4)]
    for thread in threads:
        thread.start()
    assert render("Hello {{ name }}", CONTEXT) == "Hello Иван"  # not slowed down past its budget
    for thread in threads:
        thread.join()
    assert len(results) == 4 and max(results) < TIME_BUDGET + 0.5


def test_the_refusal_is_in_russian_and_english() -> None:
    with pytest.raises(OverBudget) as caught:
        render("one\n{{ lipsum(200) }}", CONTEXT, "text")
    assert caught.value.text("en") == (
        "text: line 2: lipsum() of more than 10000 words "
        "(letter templates are bounded: the manual, docs/using/services.md, Template bounds)")
    assert caught.value.text("ru") == (
        "текст: строка 2: lipsum() больше чем на 10000 слов "
        "(у шаблонов писем есть пределы: руководство, docs/using/services.md, «Template bounds»)")


@pytest.mark.parametrize("source", [SLOW["nested loops"], BIG["center"], BIG["lipsum"]])
def test_check_template_refuses_a_template_over_budget(source: str) -> None:
    with pytest.raises(OverBudget):
        check_template(source, "text")


NORMAL_LETTER = """Hello {{ name|title or "friend" }},

{% for point in ["one", "two", "three"] %}{{ loop.index }}. {{ point|capitalize }}
{% endfor %}{{ "%-10s|" % "left" }} {{ "{:>8}".format("right") }} {{ "x"|center(9) }}
{{ (2 ** 10) * 3 }} {{ [1, 2, 3]|sum }} {{ [3, 1, 2]|sort|join(", ") }} {{ ("a" ~ "b") * 3 }}
{{ lipsum(1, html=False)|wordcount > 0 }} {{ ("Long line " * 20)|wordwrap(30) }}
{% macro sign(who) %}-- {{ who }}{% endmacro %}{{ sign(service) }}
Unsubscribe: {{ unsubscribe_url }}
"""


def test_a_normal_letter_is_nowhere_near_the_bounds() -> None:
    began = time.monotonic()
    for _ in range(20):
        text = render(NORMAL_LETTER, CONTEXT)
    assert (time.monotonic() - began) / 20 < 0.05
    assert text.startswith("Hello Иван,\n\n1. One\n2. Two\n3. Three\nleft      |    right     x    \n"
                           "3072 6 1, 2, 3 ababab\nTrue ")
    assert len(text) < 2000


def test_one_line_values_turns_exactly_the_line_ending_categories_into_spaces() -> None:
    # The rule is Unicode's categories Cc, Zl and Zp; the code spells the set
    # out for speed, so every code point is asked here.
    import sys
    import unicodedata

    from vykhukhol.render import one_line_values

    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    expected = "".join(" " if unicodedata.category(ch) in ("Cc", "Zl", "Zp") else ch
                       for ch in every)
    got = one_line_values({"name": every, "count": 3})
    assert got["name"] == expected
    assert got["count"] == 3

"""Which links of a letter are counted, and how they are rewritten
(:mod:`vykhukhol.newsletters.clicks`); the whole path through the sender and
cgi/go.py is in tests/integration/test_clicks.py."""

from __future__ import annotations

import pytest

from vykhukhol import tokens
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput
from vykhukhol.newsletters import clicks

SITE = "https://lists.example.org"
SECRET = b"s" * 32


def rewritten(text: str, html: str | None = None) -> clicks.Prepared:
    return clicks.rewrite(SITE, SECRET, "job-1", text, html)


def go(number: int, html: bool = False) -> str:
    link = tokens.click_link(SITE, SECRET, "job-1", number)
    return link.replace("&", "&amp;") if html else link


def test_text_links_keep_the_punctuation_around_them() -> None:
    made = rewritten("See https://a.example/x. Or (https://b.example/y), https://c.example/(z)!")
    assert made.links == ("https://a.example/x", "https://b.example/y", "https://c.example/(z)")
    assert made.text == f"See {go(1)}. Or ({go(2)}), {go(3)}!"


@pytest.mark.parametrize("text", [
    "mailto:a@example.org", "javascript:alert('https://a.example/')", "ftp://a.example/f",
    "tel:+123", "data:text/html,https://a.example", "{{ unsubscribe_url }}",
    "https://a.example/?e={{ email }}", "{% if name %}https://a.example/{% endif %}",
    "https://lists.example.org/cgi/manage.py?e=x", "see www.example.org",
])
def test_links_that_are_never_rewritten(text: str) -> None:
    made = rewritten(text, f'<a href="{text}">x</a>')
    assert made.text == text and made.html == f'<a href="{text}">x</a>' and made.links == ()


def test_html_hrefs_in_every_quoting_and_the_same_link_once() -> None:
    html = ("<a href=\"https://a.example/?p=1&amp;q=2\">1</a> <A HREF='https://b.example/'>2</A> "
            "<a class=x href=HTTPS://c.example/>3</a> <img src=\"https://a.example/px.png\"> "
            "<link href=\"https://a.example/s.css\"> <a href=\"JavaScript:x()\">4</a>")
    made = rewritten("https://a.example/?p=1&q=2", html)
    assert made.links == ("https://a.example/?p=1&q=2", "https://b.example/", "HTTPS://c.example/")
    assert made.text == go(1)
    assert made.html == (f"<a href=\"{go(1, True)}\">1</a> <A HREF='{go(2, True)}'>2</A> "
                         f"<a class=x href={go(3, True)}>3</a> <img src=\"https://a.example/px.png\"> "
                         "<link href=\"https://a.example/s.css\"> <a href=\"JavaScript:x()\">4</a>")


def test_a_link_that_is_not_ascii_is_stored_as_a_location_header_carries_it() -> None:
    made = rewritten("https://пример.рф/?q=да")
    assert made.links == ("https://%D0%BF%D1%80%D0%B8%D0%BC%D0%B5%D1%80.%D1%80%D1%84/?q=%D0%B4%D0%B0",)


def test_at_most_max_links_are_counted() -> None:
    text = " ".join(f"https://a.example/{i}" for i in range(clicks.MAX_LINKS + 5))
    made = rewritten(text)
    assert len(made.links) == clicks.MAX_LINKS
    assert made.text.endswith(f"https://a.example/{clicks.MAX_LINKS + 4}")


def test_a_stored_table_is_kept_and_a_letter_that_differs_from_it_refused(tmp_path) -> None:
    data = DataDir(tmp_path)
    first = clicks.prepare(data, SITE, SECRET, "job-1", "https://a.example/", None)
    assert clicks.links(data, "job-1") == ("https://a.example/",)
    assert clicks.prepare(data, SITE, SECRET, "job-1", "https://a.example/", None) == first
    with pytest.raises(BadInput, match="differ"):
        clicks.prepare(data, SITE, SECRET, "job-1", "https://evil.example/", None)
    assert clicks.links(data, "job-1") == ("https://a.example/",)
    with pytest.raises(BadInput):
        data.click_file("../x", "links")


def test_a_series_letter_is_named_by_its_links() -> None:
    one = clicks.series_letter("news", 2, SITE, SECRET, "https://a.example/", None)
    assert one.startswith("news.2.") and one == clicks.series_letter(
        "news", 2, SITE, SECRET, "Other words, same https://a.example/", None)
    assert one != clicks.series_letter("news", 2, SITE, SECRET, "https://b.example/", None)


def test_counts_read_only_well_formed_lines(tmp_path) -> None:
    data = DataDir(tmp_path)
    clicks.prepare(data, SITE, SECRET, "job-1", "https://a.example/ https://b.example/", None)
    data.click_file("job-1", "counts").write_text(
        "2026-12-01T09\t2\n2026-12-01T09\t2\njunk\n2026-12-01T10\t9\n2026-12-01T10\t1\n")
    assert clicks.counts(data, "job-1") == [clicks.LinkCount(1, "https://a.example/", 1),
                                            clicks.LinkCount(2, "https://b.example/", 2)]
    assert clicks.to_json(None) == {"clicks": None, "links": []}
    assert clicks.of_letters(data, ["job-1", "job-2", "../bad"]).keys() == {"job-1"}


def test_a_series_letters_clicks_header_is_kept_by_every_change_but_its_own_box(site) -> None:
    from vykhukhol import services as svc

    service = site.service("news")
    svc.add_letter(service, "One", "0s", "https://a.example/", clicks=True)
    svc.add_letter(service, "Two", "1d", "Two", public=True)
    assert [(letter.clicks, letter.public) for letter in svc.load_letters(service)] == [
        (True, False), (False, True)]
    svc.move_letter(service, 1, 2)
    assert [letter.clicks for letter in svc.load_letters(service)] == [False, True]
    assert "Clicks: yes" in (service.letters_dir / "002.txt").read_text()
    svc.edit_letter(service, 2, "One", "0s", "https://a.example/", public=True)  # the box unticked
    assert [(letter.clicks, letter.public) for letter in svc.load_letters(service)] == [
        (False, True), (False, True)]

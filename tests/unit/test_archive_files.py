"""The public archive's files (lib/vykhukhol/archive/) on a real folder:
what a page shows of a letter, which names the web routes accept, and that
the switch writes and removes the files. The whole way through runs and
servers is tests/integration/test_archive.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from vykhukhol import archive, settings
from vykhukhol import services as svc
from vykhukhol.archive import pages, publish
from vykhukhol.datadir import DataDir


def test_a_letters_text_is_escaped_and_its_web_addresses_become_links():
    html = pages.text_html('<b>hi</b> & "q" see https://example.org/a?b=1&c=<2>, or http://x.org.')
    assert html == ('&lt;b&gt;hi&lt;/b&gt; &amp; &quot;q&quot; see '
                    '<a href="https://example.org/a?b=1&amp;c=" rel="nofollow noopener">'
                    'https://example.org/a?b=1&amp;c=</a>&lt;2&gt;, or '
                    '<a href="http://x.org" rel="nofollow noopener">http://x.org</a>.')


@pytest.mark.parametrize("name", ["index.html", "feed.atom", "letter-001.html",
                                  "news-20261201-012226-39ab8d.html", "letter-001.en.html",
                                  "news-20261201-012226-39ab8d.ru.html"])
def test_the_routes_accept_the_names_the_archive_writes(name):
    assert archive.FILE_NAME.fullmatch(name)


@pytest.mark.parametrize("name", ["", ".htaccess", "index.htm", "letter-1.html", "letter-0001.html",
                                  "news-.html", "news-A.html", "notes.txt", "evil.py", "../index.html",
                                  "index.html/", "feed.atom.py", "news-x/../../y.html",
                                  "letter-001.de.html", "letter-001.en.en.html", "index.en.html"])
def test_the_routes_refuse_any_other_name(name):
    assert not archive.FILE_NAME.fullmatch(name)


@pytest.fixture
def data(tmp_path: Path) -> tuple[DataDir, settings.Settings]:
    data = DataDir(tmp_path / "data")
    data.make_skeleton()
    values = {"site_url": "https://lists.example.org", "language": "en",
              "archive_dir": str(tmp_path / "web" / "archive"), "security.secret": "s" * 40}
    svc.add_db(data, "main")
    svc.add_service(data, "news", "main", {"title": "News"})
    return data, settings.Settings(values)


def test_the_switch_writes_the_published_letters_and_removes_them(data, tmp_path: Path):
    data, config = data
    service = svc.find_service(data, "news")
    svc.add_letter(service, "Hi {{ name }}", "0s", "Dear {{ name }} <{{ email }}>: {{ unsubscribe_url }}",
                   public=True)
    archive.add_entries(data, "news", [archive.Entry("2026-12-01T10:00:00Z", "letter", "1")])
    folder = tmp_path / "web" / "archive" / "news"
    publish.switch(data, config, "news", True)
    assert sorted(p.name for p in folder.iterdir()) == ["feed.atom", "index.html", "letter-001.html"]
    page = (folder / "letter-001.html").read_text(encoding="utf-8")
    assert "Dear  &lt;&gt;: (a personal link" in page  # no name, no address, no link
    assert folder.stat().st_mode & 0o005 == 0o005 and (folder.parent.stat().st_mode & 0o001)
    publish.switch(data, config, "news", False)
    assert not folder.exists()
    assert not svc.find_service(data, "news").archive


def test_a_letter_no_longer_public_leaves_the_archive_at_the_next_build(data, tmp_path: Path):
    data, config = data
    service = svc.find_service(data, "news")
    svc.add_letter(service, "One", "0s", "x", public=True)
    archive.add_entries(data, "news", [archive.Entry("2026-12-01T10:00:00Z", "letter", "1")])
    service = publish.switch(data, config, "news", True)
    svc.edit_letter(service, 1, "One", "0s", "x", public=False)
    assert pages.build(data, config, service) == 0
    assert not (tmp_path / "web" / "archive" / "news" / "letter-001.html").exists()


def test_web_url_is_the_page_only_for_a_public_letter_of_an_archive_that_is_on(data):
    data, config = data
    service = svc.find_service(data, "news")
    signed = archive.web_url(config, service, "1", "a@example.org", True)
    assert signed.startswith("https://lists.example.org/cgi/view.py?s=news&l=1&e=a%40example.org&t=")
    service = svc.edit_service(data, "news", {"archive": "yes"})
    assert archive.web_url(config, service, "1", "a@example.org", True) == \
        "https://lists.example.org/archive/news/letter-001.html"
    assert "view.py" in archive.web_url(config, service, "2", "a@example.org", False)


def test_turning_the_archive_on_publishes_the_public_letters_that_went_out_meanwhile(data, tmp_path):
    """A run publishes only into an archive that is on; the switch catches up on the rest."""
    from vykhukhol.services import subscribers as subs
    from vykhukhol.services.subscriber_line import Subscriber
    from vykhukhol.states import SubscriberState
    from vykhukhol.timeutil import now

    data, config = data
    service = svc.find_service(data, "news")
    for number in (1, 2, 3):
        svc.add_letter(service, f"Letter {number}", "0s", "x", public=number != 2)
    moment = now()
    subs.add(service.subscribers_path, Subscriber(
        email="a@example.org", name="", state=SubscriberState.ACTIVE, subscribed=moment,
        confirmed=moment, sent=2, last_sent=moment, reminders=0, last_reminder=None, failures=0,
        ip="-"))
    publish.switch(data, config, "news", True)
    folder = tmp_path / "web" / "archive" / "news"
    assert (folder / "letter-001.html").is_file()
    assert not (folder / "letter-002.html").exists()  # gone out, but not public
    assert not (folder / "letter-003.html").exists()  # public, but nobody has had it yet

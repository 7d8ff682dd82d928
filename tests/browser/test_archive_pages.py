"""The public archive in Chromium (docs/using/archive.md#archive): the admin's switch and
address on the service page, the Public box of the letter editor, and the
archive's index and letter page as a visitor sees them, served by the real
`vykhukhol serve`; screenshots in tests/artifacts/."""

from __future__ import annotations

from pathlib import Path

from vykhukhol import services as svc

SUBJECT = "Spring <script>document.title='owned'</script> notes"


def test_the_admin_turns_the_archive_on_and_a_visitor_reads_it(site, server, browser,
                                                                 tmp_path: Path):
    site.set(archive_dir=str(tmp_path / "archive"))
    service = site.service("news", title="Garden news")
    svc.add_letter(service, SUBJECT, "0s",
                   "Hello {{ name }},\nthe tulips are out.\nOnline: {{ web_url }}\n"
                   "Leave: {{ unsubscribe_url }}\nMore at https://example.org/garden.\n",
                   public=True)
    svc.add_letter(service, "Members only", "0s", "Not for the archive.\n")
    site.subscriber("news", "gardener@example.com", name="Gert Gardener")
    b = browser
    b.log_in()
    b.open("/admin/services/news")
    assert b.text("#archive-state") == "Public archive: off"
    b.press("#toggle-archive")
    assert "The public archive is on." in b.flash()
    assert b.text("#archive-state") == "Public archive: on"
    address = b.find("#archive-url").get_attribute("href")
    assert address == f"{server.url}/archive/news/"
    assert "public" in b.text("#letters")
    b.screenshot("archive-service-page-en")

    b.open("/admin/services/news/letters/1")
    assert b.find("#public").is_selected()
    b.open("/admin/services/news/letters/2")
    assert not b.find("#public").is_selected()

    for _ in range(2):  # letter 1, then letter 2: one a subscriber and run
        site.ok("cron")
    b.open(address)
    assert b.driver.title == "Archive of “Garden news”"
    links = b.all("li a")
    assert [a.text for a in links] == ["Spring <script>document.title='owned'</script> notes"]
    b.screenshot("archive-index-en")
    b.press(links[0])
    assert b.path == "/archive/news/letter-001.html"
    assert b.driver.title.startswith("Spring <script>")  # text, not a script that ran
    body = b.text()
    assert "the tulips are out." in body and "Gert" not in body and "gardener@" not in body
    assert "(a personal link: it is in each subscriber's own copy of the letter)" in body
    b.screenshot("archive-letter-en")

"""Letters written in Markdown (docs/using/services.md#markdown): a newsletter
made with ``newsletter create --markdown`` (a real subprocess) and a series
letter made with ``letter add --markdown`` reach a real SMTP server (aiosmtpd)
with an HTML part and a readable text part; hostile Markdown and a hostile
subscriber name are escaped; the admin's preview shows both parts; counted
clicks and the archive see the HTML part's links. A letter file without the
``Format`` line keeps its meaning.

Each test fails on the code before Markdown letters: ``--markdown`` and the
form's box were unknown, and a letter's text was sent as written."""

from __future__ import annotations

import html as html_lib
import re

import pytest

from support.servetools import admin_client
from vykhukhol import archive, newsletters
from vykhukhol import services as svc

ADMIN = "admin@example.org"
BOB, EVE = "bob@example.org", "eve@example.org"
HOSTILE_NAME = "<b>Eve</b> *starred* [click](https://evil.example/)"

LETTER = """# Big news for {{ name }}

Our *new* course is **open**: [read about it](https://example.org/course).

- lesson one
- lesson two

1. sign up
2. learn

Write to <desk@example.org> or visit <https://example.org/>.
"""

HOSTILE = """Hello {{ name }}.

<script>alert(1)</script> and <img src=x onerror=alert(2)>

[run](javascript:alert(3)) [run again](JAVASCRIPT:alert(4)) [vb](vbscript:msgbox(5))
[page](data:text/html;base64,PHNjcmlwdD4=) ![pixel](data:image/png;base64,iVBORw0KGgo=)
[file](file:///etc/passwd) [fine](https://example.org/fine)
"""


def parts(message) -> tuple[str, str]:
    """(text, HTML) of a received letter."""
    text = message.get_body(preferencelist=("plain",)).get_content()
    html = message.get_body(preferencelist=("html",))
    return text.replace("\r\n", "\n"), html.get_content().replace("\r\n", "\n") if html else ""


def delivered(server, to: str) -> list:
    return [r.message for r in server.handler.received if to in r.rcpt_tos]


def news_site(site, server, *people: tuple[str, str]) -> None:
    site.use_smtp(server.port)
    site.service("news", enabled=False)
    for email, name in people:
        site.subscriber("news", email, name=name)


def create(site, tmp_path, body: str, *extra: str) -> str:
    source = tmp_path / "letter.md"
    source.write_text(body, encoding="utf-8")
    done = site.cli("newsletter", "create", "--services", "news", "--subject", "News",
                    "--body-file", str(source), "--markdown", *extra)
    return done.stdout.strip()


# --- a newsletter --------------------------------------------------------------------

def test_a_markdown_newsletter_arrives_with_an_html_part_and_a_readable_text_part(
        site, smtp_server, tmp_path):
    news_site(site, smtp_server, (BOB, "Bob"))
    job = create(site, tmp_path, LETTER)
    assert "Format: markdown" in site.data.job(job, "letter").read_text(encoding="utf-8")
    site.run_at()
    [message] = delivered(smtp_server, BOB)
    text, html = parts(message)

    assert "<h1>Big news for Bob</h1>" in html
    assert "<em>new</em>" in html and "<strong>open</strong>" in html
    assert '<a href="https://example.org/course">read about it</a>' in html
    assert "<li>lesson one</li>" in html and "<ol>" in html
    assert '<a href="mailto:desk@example.org">desk@example.org</a>' in html
    assert "vykhukhol-footer" in html  # the footer, as any HTML letter's

    assert text.startswith("Big news for Bob\n\n")
    assert "Our new course is open: read about it (https://example.org/course)." in text
    assert "- lesson one\n- lesson two" in text
    assert "1. sign up\n2. learn" in text
    assert "Write to desk@example.org or visit https://example.org/." in text
    assert "*" not in text and "](" not in text and "<" not in text.split("-- \n")[0]
    assert "Отписаться: https://lists.example.org/" in text  # the text footer (the site is Russian)


def test_hostile_markdown_and_a_hostile_name_are_escaped(site, smtp_server, tmp_path):
    news_site(site, smtp_server, (EVE, HOSTILE_NAME))
    create(site, tmp_path, HOSTILE)
    site.run_at()
    [message] = delivered(smtp_server, EVE)
    text, html = parts(message)

    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    hrefs = re.findall(r'(?:href|src)="([^"]*)"', html)
    assert all(not re.match(r"(?i)(javascript|vbscript|data|file):", h) for h in hrefs), hrefs
    assert "https://example.org/fine" in hrefs
    # the name is the subscriber's words, never markup nor a link
    assert f"Hello {html_lib.escape(HOSTILE_NAME, quote=False)}." in html
    assert "<b>Eve" not in html and "<em>starred" not in html
    assert "https://evil.example/" not in hrefs
    assert f"Hello {HOSTILE_NAME}." in text
    assert "fine (https://example.org/fine)" in text


def test_a_markdown_letter_with_an_html_part_too_is_refused_and_nothing_is_made(
        site, smtp_server, tmp_path):
    news_site(site, smtp_server, (BOB, "Bob"))
    (tmp_path / "extra.html").write_text("<p>Hi</p>", encoding="utf-8")
    (tmp_path / "letter.md").write_text("Hi", encoding="utf-8")
    done = site.cli("newsletter", "create", "--services", "news", "--subject", "News",
                    "--body-file", str(tmp_path / "letter.md"), "--markdown",
                    "--html-file", str(tmp_path / "extra.html"), check=False)
    assert done.returncode == 1 and "Markdown letter makes its HTML part itself" in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert newsletters.list_jobs(site.data) == []


def test_a_markdown_letter_past_its_bound_is_refused_in_one_line(site, tmp_path):
    """markdown-it reads some texts in quadratic time: the length is bounded first."""
    site.service("course")
    (tmp_path / "long.md").write_text("*a " * 10001, encoding="utf-8")
    done = site.cli("letter", "add", "course", "--subject", "Long", "--delay", "0s",
                    "--body-file", str(tmp_path / "long.md"), "--markdown", check=False)
    assert done.returncode == 1 and "at most 30000 characters" in done.stderr
    assert done.stderr.count("\n") == 1
    assert svc.load_letters(svc.find_service(site.data, "course")) == []

    # made too long by FTP: the Status warns of it, the run passes it over, nothing breaks
    site.cli("letter", "add", "course", "--subject", "Short", "--delay", "0s", "--body", "*Hi*",
             "--markdown")
    path = svc.find_service(site.data, "course").letters_dir / "001.txt"
    path.write_text(path.read_text(encoding="utf-8") + "*a " * 10001, encoding="utf-8")
    status = site.cli("status", check=False)
    assert "letter 1 cannot be made" in status.stdout + status.stderr
    assert "Traceback" not in status.stdout + status.stderr
    site.subscriber("course", BOB, name="Bob")
    site.run_at()
    assert [m["To"] for m in site.outbox()] == [ADMIN]  # the alert, not the letter
    assert site.subscribers("course")[BOB].sent == 0


def test_counted_clicks_and_the_archive_see_the_html_links(site, smtp_server, tmp_path):
    news_site(site, smtp_server, (BOB, "Bob"))
    job = create(site, tmp_path, LETTER, "--clicks")
    kept = archive.kept_newsletter(site.data, job)
    assert kept is not None and '<a href="https://example.org/course">' in (kept.html or "")
    site.run_at()
    [message] = delivered(smtp_server, BOB)
    text, html = parts(message)
    links = (site.data.root / "clicks" / f"{job}.links").read_text(encoding="utf-8")
    assert "https://example.org/course" in links
    assert '<a href="https://lists.example.org/cgi/go.py?' in html
    assert 'href="https://example.org/course"' not in html
    assert "read about it (https://lists.example.org/cgi/go.py?" in text


# --- a series letter -----------------------------------------------------------------

def test_a_markdown_series_letter_goes_out_in_two_parts_and_an_old_file_stays_plain(
        site, smtp_server, tmp_path):
    site.use_smtp(smtp_server.port)
    site.service("course")
    (tmp_path / "one.md").write_text("Welcome, *{{ name }}*: [start](https://example.org/1).",
                                     encoding="utf-8")
    site.cli("letter", "add", "course", "--subject", "One", "--delay", "0s",
             "--body-file", str(tmp_path / "one.md"), "--markdown")
    site.cli("letter", "add", "course", "--subject", "Two", "--delay", "0s",
             "--body", "Plain *as written*.")
    listed = site.cli("letter", "list", "course").stdout
    assert "1\t0s\tOne\t(markdown)\t-" in listed and "2\t0s\tTwo\t-\t-" in listed
    site.subscriber("course", BOB, name="Bob")
    site.run_at()
    site.run_at()
    first, second = delivered(smtp_server, BOB)
    text, html = parts(first)
    assert "Welcome, <em>Bob</em>: <a href=\"https://example.org/1\">start</a>." in html
    assert text.startswith("Welcome, Bob: start (https://example.org/1).\n")
    # no Format line: the text as written, no HTML part
    assert "Format" not in (svc.find_service(site.data, "course").letters_dir / "002.txt").read_text()
    text, html = parts(second)
    assert text.startswith("Plain *as written*.\n") and html == ""


# --- the admin -----------------------------------------------------------------------

@pytest.fixture
def admin(site):
    site.set(language="en")
    request = admin_client(site)

    def page(path: str, fields: dict | None = None) -> tuple[int, str]:
        """A POST of ``fields``, or a GET without them."""
        status, _, text = request("GET", path) if fields is None else request("POST", path, fields)
        return status, text

    return page


def preview_of(page: str) -> tuple[str, str]:
    """(text, HTML) the preview shows: the text block and the frame's document."""
    text = re.search(r'<pre id="preview-text"[^>]*>(.*?)</pre>', page, re.S)
    frame = re.search(r'<iframe id="preview-html"[^>]*srcdoc="([^"]*)"', page, re.S)
    assert text and frame, page
    return html_lib.unescape(text.group(1)), html_lib.unescape(frame.group(1))


def test_the_admin_previews_both_parts_of_a_markdown_series_letter_and_saves_it(site, admin):
    site.service("course")
    letter = {"subject": "One", "delay": "0s", "html": "", "markdown": "yes",
              "body": "# Hi {{ name }}\n\n[Start](https://example.org/1) <script>x</script>"}
    status, page = admin("/services/course/letters", {**letter, "action": "preview"})
    assert status == 200
    text, html = preview_of(page)
    assert "<h1>Hi Ivan</h1>" in html
    assert '<a href="https://example.org/1">Start</a>' in html
    assert "<script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html
    assert text.startswith("Hi Ivan\n\nStart (https://example.org/1) <script>x</script>")
    assert 'id="markdown" value="yes" checked' in page  # the box stays ticked

    status, _ = admin("/services/course/letters", {**letter, "action": "save"})
    assert status == 303
    [saved] = svc.load_letters(svc.find_service(site.data, "course"))
    assert saved.markdown and saved.body.startswith("# Hi")
    status, page = admin("/services/course")
    assert status == 200 and '<span class="muted">Markdown</span>' in page

    status, page = admin("/services/course/letters",
                         {**letter, "html": "<p>also</p>", "action": "save"})
    assert status == 400 and "makes its HTML part itself" in page
    assert len(svc.load_letters(svc.find_service(site.data, "course"))) == 1

    # moved behind a plain letter, it stays Markdown; its page shows the box ticked
    service = svc.find_service(site.data, "course")
    svc.add_letter(service, "Zero", "0s", "Plain *text*.", position=1)
    status, page = admin("/services/course/letters/2")
    assert status == 200 and 'id="markdown" value="yes" checked' in page
    svc.move_letter(service, 2, 1)
    first, second = svc.load_letters(service)
    assert (first.markdown, second.markdown) == (True, False)
    assert second.parts() == ("Plain *text*.", None)


def test_the_admin_previews_and_creates_a_markdown_newsletter(site, admin):
    site.service("news")
    site.subscriber("news", BOB, name="Bob")
    letter = {"svc_news": "1", "subject": "News", "html": "", "markdown": "yes",
              "text": "Read *this*: [it](https://example.org/it)"}
    status, page = admin("/newsletters/new", {**letter, "action": "preview"})
    assert status == 200
    text, html = preview_of(page)
    assert '<p>Read <em>this</em>: <a href="https://example.org/it">it</a></p>' in html
    assert text.startswith("Read this: it (https://example.org/it)\n")
    status, _ = admin("/newsletters/new", {**letter, "action": "create"})
    assert status == 303
    [job] = newsletters.list_jobs(site.data)
    subject, body, html_part, markdown = newsletters.read_source(site.data, job.name)
    assert markdown and body == letter["text"] and html_part is None
    assert '<a href="https://example.org/it">' in (newsletters.read_letter(site.data, job.name)[2] or "")

    # its edit page shows the Markdown as written, the box ticked; a save keeps it Markdown
    status, page = admin(f"/newsletters/{job.name}/edit")
    assert status == 200 and 'id="markdown" value="yes" checked' in page
    assert html_lib.escape(letter["text"], quote=False) in page
    status, _ = admin(f"/newsletters/{job.name}/edit",
                      {"subject": "News", "text": "Now **bold**.", "html": "", "markdown": "yes",
                       "action": "save"})
    assert status == 303
    assert newsletters.read_letter(site.data, job.name)[2] == "<p>Now <strong>bold</strong>.</p>\n"

"""Lock files piled up in data/newsletters/.

Every finished job left ``<job>.job.lock`` and ``<job>.list.lock`` behind
(docs/design/run.md#run-steps: a finished job's files are deleted), starting a newsletter that does
not exist left ``<name>.job.lock``, and ``news.free.lock`` stayed from the
day the folder was made. Anyone who may start a job could fill the folder.
Replayed through the real CLI and cron subprocesses and a real ``vykhukhol
serve``: afterwards data/newsletters/ holds only its rename lock (news.free)
and the .keep a fresh checkout ships.
"""

from __future__ import annotations

import http.client
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from support.servetools import PASSWORD, ServeProcess
from support.webtools import Page, free_port

MISSING = "20261130-000000-abcdef"  # a well-formed job name that no job has


#: What data/newsletters/ may always hold: its rename lock, the .keep a checkout
#: ships, and the newsletters' history (for the owner and for bounces that come
#: back later, docs/using/newsletters.md#newsletter-history) with its one lock file; finished.txt is what
#: an older version kept instead.
KEPT = {"news.free", ".keep", "history.txt", "history.txt.lock", "finished.txt",
        "finished.txt.lock"}


def leftovers(site: Any) -> list[str]:
    """What data/newsletters/ holds beyond what it always may (and a finished job's
    rows that did not get it, docs/using/newsletters.md#newsletter-failed)."""
    return sorted(set(p.name for p in site.data.newsletters.iterdir()
                      if p.suffix != ".missed") - KEPT)


def create(site: Any) -> str:
    return site.cli("newsletter", "create", "--services", "news", "--subject", "News",
                    "--body", "Hello {{ name }}").stdout.strip()


def test_finished_cancelled_and_missing_jobs_leave_no_lock_files(site):
    site.service("news", enabled=False)
    site.set(news_per_run=1)
    for email in ("anna@example.org", "boris@example.org", "vera@example.org"):
        site.subscriber("news", email)
    job = create(site)
    site.cli("cron")  # one letter; the job goes on
    site.cli("subscriber", "remove", "news", "boris@example.org")  # skips his row, under its lock
    site.cli("cron")
    site.cli("cron")  # the last letter: the job is finished and deleted
    assert not site.data.job(job, "job").exists()
    assert sorted(str(m["To"]) for m in site.outbox() if str(m["Subject"]) == "News") == [
        "anna@example.org", "vera@example.org"]
    assert leftovers(site) == []

    cancelled = create(site)
    site.cli("newsletter", "cancel", cancelled)
    assert site.cli("newsletter", "cancel", MISSING, check=False).returncode == 1
    assert site.cli("newsletter", "cancel", "nosuch", check=False).returncode == 1
    site.cli("cron")
    assert leftovers(site) == []


class Server(ServeProcess):
    cookie = ""

    def request(self, method: str, path: str, fields: dict[str, str] | None = None) -> Page:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = {"Cookie": self.cookie, "Origin": self.url} if self.cookie else {"Origin": self.url}
        body = None
        if fields is not None:
            body = urlencode(fields).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            page = Page(response.status, {k.lower(): v for k, v in response.getheaders()},
                        response.read())
        finally:
            conn.close()
        if "set-cookie" in page.headers:
            self.cookie = page.headers["set-cookie"].split(";")[0]
        return page

    def log_in(self) -> str:
        """Log in as a browser does; the CSRF token of the session."""
        [form] = self.request("GET", "/admin/login").forms()
        answer = self.request("POST", "/admin/login", {**form.hidden, "password": PASSWORD})
        assert answer.status == 303, answer
        page = self.request("GET", "/admin/settings")
        return re.search(r'name="csrf" value="([^"]+)"', page.body).group(1)


def test_starting_a_newsletter_that_does_not_exist_leaves_no_lock_file(site, tmp_path: Path):
    site.set(language="en")
    server = Server(site, free_port(), tmp_path / "serve")
    server.start()
    try:
        csrf = server.log_in()
        page = server.request("POST", f"/admin/newsletters/{MISSING}/start",
                              {"csrf": csrf, "at": "2099-01-01T09:00"})
        assert page.status == 404, page
    finally:
        server.stop()
    assert leftovers(site) == []

"""A service's two switches (docs/using/services.md#service-switches): disabled
holds back its series letters and nothing else; closed turns newcomers away
(the real subscribe and own-page CGI scripts, the CLI as a process, the admin
app) while those already on it keep getting its series and newsletters."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest

from support.cgikit import SITE_URL
from support.servetools import admin_client, subprocess_env
from support.webtools import assert_clean_page
from vykhukhol import services as svc
from vykhukhol import tokens
from vykhukhol.settings import load as load_settings

SAME_SITE = {"HTTP_SEC_FETCH_SITE": "same-origin"}


def cli(data_root: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(data_root), *args],
                          capture_output=True, text=True, timeout=120, env=subprocess_env())
    assert done.returncode == 0, done.stderr
    return done.stdout


def files_of(data_root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(data_root)): p.read_bytes() for p in sorted(data_root.rglob("*"))
            if p.is_file() and not p.name.endswith(".free") and "log" not in p.parts}


def test_service_add_says_what_disabled_means(tmp_path):
    root = tmp_path / "data"
    cli(root, "init", "--admin-email", "admin@example.org", "--password", "correct-horse-1",
        "--cgi-dir", str(tmp_path), "--site-url", SITE_URL)
    cli(root, "db", "add", "main")
    said = cli(root, "service", "add", "news", "--db", "main", "--title", "News")
    assert "disabled: its series letters wait until you enable it" in said
    assert "sign-ups and newsletters do not wait" in said
    assert "series letters wait; sign-ups, confirmations and newsletters go on" in cli(
        root, "service", "disable", "news")
    assert "close a service to newcomers" in cli(root, "service", "--help")


def test_a_closed_list_takes_no_sign_up_and_says_so(install):
    said = cli(install.data_root, "service", "close", "news")
    assert said.strip() == "service news closed: it takes no sign-ups; those on it still get its letters"
    assert svc.find_service(install.data, "news").closed
    assert cli(install.data_root, "service", "list").splitlines() == [
        "#name\tdb\tstate\tsignups\tletters\ttitle", "news\tmain\tenabled\tclosed\t1\tNews"]
    before = files_of(install.data_root)

    page = install.run("cgi/subscribe.py", query="service=news")
    assert page.status == 200 and "This list is closed" in page.body, page
    assert "“News” takes no new subscribers now." in page.body
    assert not [f for f in page.forms() if "email" in f.fields]
    posted = install.run("cgi/subscribe.py", "POST",
                         body=urlencode({"service": "news", "email": "new@example.org"}).encode(),
                         **SAME_SITE)
    assert posted.status == 403 and "This list is closed" in posted.body, posted
    assert_clean_page(posted)
    assert files_of(install.data_root) == before  # nothing written, nothing sent
    assert not install.outbox()

    cli(install.data_root, "settings", "set", "language", "ru")
    russian = install.run("cgi/subscribe.py", query="service=news")
    assert "Эта рассылка закрыта" in russian.body, russian

    cli(install.data_root, "service", "open", "news")
    cli(install.data_root, "settings", "set", "language", "en")
    again = install.run("cgi/subscribe.py", "POST",
                        body=urlencode({"service": "news", "email": "new@example.org"}).encode(),
                        **SAME_SITE)
    assert again.status == 200 and "new@example.org" in install.subscribers()


def test_an_old_service_file_without_the_switch_reads_as_open(install):
    ini = svc.find_service(install.data, "news").ini_path
    ini.write_text("".join(line for line in ini.read_text().splitlines(keepends=True)
                           if not line.startswith("closed")))
    assert not svc.find_service(install.data, "news").closed
    page = install.run("cgi/subscribe.py", query="service=news")
    assert page.status == 200 and "This list is closed" not in page.body


def test_those_on_a_closed_list_still_get_series_and_newsletters(install):
    cli(install.data_root, "subscriber", "add", "news", "anna@example.org", "--confirmed")
    cli(install.data_root, "service", "close", "news")
    cli(install.data_root, "newsletter", "create", "--services", "news", "--subject", "Hello all",
        "--body", "News for everyone.")
    cli(install.data_root, "cron")
    subjects = sorted(str(m["Subject"]) for m in install.mails_to("anna@example.org"))
    assert subjects == ["Hello all", "Lesson 1"]


def test_the_own_page_offers_no_closed_list_and_refuses_to_join_it(install):
    svc.add_service(install.data, "open", "main", {"title": "Open list"})
    svc.add_service(install.data, "shut", "main", {"title": "Shut list"})
    cli(install.data_root, "service", "close", "shut")
    anna = "anna@example.org"
    cli(install.data_root, "subscriber", "add", "news", anna, "--confirmed")
    settings = load_settings(install.data.settings)
    link = tokens.manage_link(settings["site_url"], settings.secret, anna)
    page = install.run("cgi/manage.py", query=urlsplit(link).query)
    assert page.status == 200 and "Open list" in page.body, page
    assert "Shut list" not in page.body
    join = next(f for f in page.forms() if f.fields.get("action") == "join")
    join.fields["service"] = "shut"
    refused = install.run("cgi/manage.py", "POST", body=join.encoded(), **SAME_SITE)
    assert refused.status == 400 and "There is no such list." in refused.body, refused
    assert svc.find_service(install.data, "shut").closed
    assert not (install.data.db("main") / "shut" / "subscribers.txt").read_text().count(anna)


@pytest.fixture
def admin(site):
    site.set(language="en")
    site.service("news")
    return admin_client(site)


def test_the_admin_closes_and_opens_a_list_behind_csrf(site, admin):
    status, _, page = admin("GET", "/services")
    assert status == 200 and 'id="close-news"' in page
    assert "Disabled: its series letters wait until it is enabled" in page
    status, _, _ = admin("POST", "/services/news/close", token=False)
    assert status == 403 and not svc.find_service(site.data, "news").closed
    status, headers, _ = admin("POST", "/services/news/close", {"back": "list"})
    assert status == 303 and "/admin/services?" in headers["Location"]
    assert svc.find_service(site.data, "news").closed
    status, _, page = admin("GET", "/services")
    assert 'id="open-news"' in page and 'id="signups-news"' in page
    status, _, page = admin("GET", "/services/news")
    assert "Closed to sign-ups" in page and 'id="toggle-signups"' in page
    assert 'id="snippet-closed"' in page
    # The service's own form does not carry the switch: saving it keeps the list closed.
    status, _, _ = admin("POST", "/services/news", {"title": "News", "public": "yes"})
    assert status == 303 and svc.find_service(site.data, "news").closed
    status, headers, _ = admin("POST", "/services/news/open")
    assert status == 303 and "/admin/services/news?" in headers["Location"]
    assert not svc.find_service(site.data, "news").closed


def test_the_admin_says_what_disabled_means_in_both_languages(site, admin):
    status, _, page = admin("GET", "/newsletters/new")
    assert status == 200
    assert "disabling a service holds back only its series letters" in page
    site.set(language="ru")
    status, _, page = admin("GET", "/services")
    assert "Выключена: её серийные письма ждут" in page
    status, _, page = admin("GET", "/newsletters/new")
    assert "только её серийные письма" in page

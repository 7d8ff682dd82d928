"""An empty secret failed open.

With ``secret =`` in settings.ini, or a settings.ini that did not parse, every
link was signed with an empty key, so a stranger could compute the unsubscribe
token of any address and throw anybody off a list. Now, with no secret or one
under 32 characters, the public pages answer 503 with one bilingual sentence,
the sender refuses to run, `vykhukhol status` and the admin's status page say
why, `settings set security.secret` refuses a short one and `init` writes a
strong one.

Each attack is run the way it was: the forged link posted to a real
`vykhukhol serve`, the run started by the real command and the cron URL.
"""

from __future__ import annotations

import http.client
import re
import socket
import subprocess
import sys
from urllib.parse import urlencode

import pytest

from support.servetools import PASSWORD, ServeProcess, subprocess_env
from vykhukhol import tokens

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
VICTIM = "victim@example.org"
SHORT = "s" * 31

BROKEN = {
    "empty": lambda text: re.sub(r"(?m)^secret = .*$", "secret =", text),
    "unparsable": lambda text: "[main\n" + text,
    "short": lambda text: re.sub(r"(?m)^secret = .*$", f"secret = {SHORT}", text),
    "missing": lambda text: re.sub(r"(?m)^secret = .*\n", "", text),
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def request(server: ServeProcess, method: str, path: str, fields: dict[str, str] | None = None,
            cookie: str = "") -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        headers = dict(FORM) if fields is not None else {}
        if cookie:
            headers["Cookie"] = cookie
        conn.request(method, path, body=urlencode(fields).encode() if fields is not None else None,
                     headers=headers)
        response = conn.getresponse()
        return (response.status, {k.lower(): v for k, v in response.getheaders()},
                response.read().decode("utf-8", "replace"))
    finally:
        conn.close()


@pytest.fixture
def server(site, tmp_path):
    site.service("news", letters=[("Hello", "0s", "Hello {{ name }}")])
    site.subscriber("news", VICTIM, name="Victim", state="new")
    serve = ServeProcess(site, free_port(), tmp_path / "serve")
    serve.start()
    yield serve
    serve.stop()


def break_secret(site, how: str) -> None:
    path = site.data.settings
    path.write_text(BROKEN[how](path.read_text(encoding="utf-8")), encoding="utf-8")


def assert_refused(status: int, body: str, lang: str) -> None:
    assert status == 503, body
    assert "Traceback" not in body
    assert ("ссылки нельзя подписать" if lang == "ru" else "links cannot be signed") in body, body


@pytest.mark.parametrize("how", sorted(BROKEN))
def test_a_link_forged_with_an_empty_key_changes_nothing_and_every_page_refuses(site, server, how):
    break_secret(site, how)
    lang = "ru"  # the default: an unreadable settings.ini falls back to it too
    for purpose, script in (("unsubscribe", "unsubscribe.py"), ("confirm", "confirm.py")):
        forged = tokens.make(b"", "news", VICTIM, purpose)
        fields = {"s": "news", "e": VICTIM, "t": forged}
        assert_refused(*_status_body(request(server, "POST", f"/cgi/{script}", fields)), lang)
        assert_refused(*_status_body(request(server, "GET", f"/cgi/{script}?{urlencode(fields)}")), lang)
    own = {"e": VICTIM, "t": tokens.make_for_address(b"", VICTIM, "manage")}
    assert_refused(*_status_body(request(server, "GET", f"/cgi/manage.py?{urlencode(own)}")), lang)
    assert_refused(*_status_body(request(server, "POST", "/cgi/manage.py",
                                         {**own, "action": "leave_all"})), lang)
    assert_refused(*_status_body(request(server, "GET", "/cgi/manage.py")), lang)
    status, _, body = request(server, "GET", "/cgi/subscribe.py?service=news")
    assert_refused(status, body, lang)
    status, _, body = request(server, "POST", "/cgi/subscribe.py",
                              {"service": "news", "email": "new@example.org"})
    assert_refused(status, body, lang)
    assert VICTIM in site.subscribers("news"), "the forged unsubscribe link worked"
    assert site.subscribers("news")[VICTIM].state.value == "new", "the forged confirm link worked"
    assert "new@example.org" not in site.subscribers("news")
    assert site.outbox() == []


def _status_body(answer: tuple[int, dict[str, str], str]) -> tuple[int, str]:
    return answer[0], answer[2]


def test_the_refusal_is_in_the_sites_language(site, server):
    site.set(language="en")
    break_secret(site, "empty")
    status, _, body = request(server, "GET", "/cgi/subscribe.py?service=news")
    assert_refused(status, body, "en")


def test_no_run_sends_with_an_empty_secret_and_status_and_admin_say_why(site, server):
    site.subscriber("news", "reader@example.org", state="active")
    break_secret(site, "empty")

    cron = site.cli("cron", check=False)
    assert cron.returncode == 1
    assert "security.secret" in cron.stderr and "Traceback" not in cron.stderr
    assert len(cron.stderr.strip().splitlines()) == 1
    cron_url = next(site.cgi_dir.glob("cron-*.py")).name
    status, headers, body = request(server, "GET", f"/cgi/{cron_url}")
    assert status == 503 and "security.secret" in body and headers["content-type"].startswith("text/plain")
    assert site.outbox() == []

    status_out = site.cli("status").stdout
    assert "secret: refusing" in status_out
    assert "security.secret is missing or shorter than 32 characters" in status_out

    status, headers, body = request(server, "POST", "/admin/login", {"password": PASSWORD})
    assert status == 303, body
    cookie = headers["set-cookie"].split(";")[0]
    status, _, body = request(server, "GET", "/admin/", cookie=cookie)
    assert status == 200, body
    assert "security.secret" in body and "32" in body
    # A page that would make a link (a letter's preview) refuses, and says why.
    csrf = re.search(r'name="csrf" value="([^"]+)"', body).group(1)
    status, _, body = request(server, "POST", "/admin/services/news/letters", cookie=cookie, fields={
        "csrf": csrf, "subject": "S", "delay": "1d", "body": "{{ unsubscribe_url }}", "html": "",
        "position": "", "action": "preview"})
    assert status == 503 and "security.secret" in body and "Traceback" not in body, body


def test_a_short_secret_is_refused_and_a_generated_one_opens_the_pages_again(site, server):
    break_secret(site, "empty")
    for value in (SHORT, "", " " * 40):
        result = site.cli("settings", "set", "security.secret", value, check=False)
        assert result.returncode == 1 and "security.secret" in result.stderr
    result = site.cli("settings", "set", "security.secret", "-", input=SHORT + "\n", check=False)
    assert result.returncode == 1
    assert site.settings().secret_problem

    site.cli("settings", "set", "security.secret", "--generate")
    stored = site.settings()["security.secret"]
    assert len(stored) >= 32
    assert stored not in site.cli("settings", "get", "security.secret").stdout
    status, _, _ = request(server, "GET", "/cgi/subscribe.py?service=news")
    assert status == 200


def test_init_writes_a_secret_of_32_random_bytes(tmp_path):
    secrets_seen = set()
    for number in range(2):
        root = tmp_path / f"fresh{number}"
        cgi = tmp_path / f"cgi{number}"
        cgi.mkdir()
        done = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(root), "init",
                               "--cgi-dir", str(cgi)], capture_output=True, text=True, timeout=120,
                              env=subprocess_env())
        assert done.returncode == 0, done.stderr
        text = (root / "settings.ini").read_text(encoding="utf-8")
        secret = re.search(r"(?m)^secret = (\S+)$", text).group(1)
        assert len(secret) >= 43  # token_urlsafe(32): 32 bytes from the system's random source
        secrets_seen.add(secret)
    assert len(secrets_seen) == 2

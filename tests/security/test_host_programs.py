"""The admin could run any program on the host.

In the admin's settings form an editor set ``mail.transport = sendmail``,
``mail.sendmail_path = /bin/bash`` and a ``from_email`` naming a file
(``/…/pwn@example.org``); "send a test letter" then ran
``/bin/bash -i -f /…/pwn@example.org -- admin@…``, that is, the file as a
shell script. Now the program and other host paths are not in the form and a
crafted POST naming them is refused whole (403, nothing saved); they are set
only with the CLI or in settings.ini, and then must be an absolute path to an
executable file; sender, bounce and admin addresses may not contain ``/`` or
start with ``-``; the sendmail transport refuses a program that cannot run and
addresses that would read as options.

Everything goes through a real `vykhukhol serve` (an admin session over HTTP)
or the real command; the script the attack runs only touches a marker file.
"""

from __future__ import annotations

import http.client
import re
import socket
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlencode

import pytest

from support.servetools import PASSWORD, ServeProcess

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
HOST_ONLY = ("mail.sendmail_path", "mail.dkim_key_file")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Forms(HTMLParser):
    """Each form's action and its fields with the values a browser would send."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.forms: list[tuple[str, dict[str, str]]] = []
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append((values.get("action", ""), {}))
        elif not self.forms:
            return
        elif tag == "input" and values.get("name"):
            self.forms[-1][1][values["name"]] = values.get("value", "")
        elif tag == "select":
            self._select = values.get("name")
            self.forms[-1][1].setdefault(self._select, "")
        elif tag == "option" and self._select and ("selected" in values
                                                   or not self.forms[-1][1][self._select]):
            self.forms[-1][1][self._select] = values.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None


class Admin:
    """An admin session on a running serve, over HTTP."""

    def __init__(self, server: ServeProcess) -> None:
        self.server = server
        status, headers, body = self.request("POST", "/admin/login", {"password": PASSWORD})
        assert status == 303, body
        self.cookie = headers["set-cookie"].split(";")[0]

    def request(self, method: str, path: str, fields: dict[str, str] | None = None
                ) -> tuple[int, dict[str, str], str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
        try:
            headers = dict(FORM) if fields is not None else {}
            if getattr(self, "cookie", ""):
                headers["Cookie"] = self.cookie
            conn.request(method, path, headers=headers,
                         body=urlencode(fields).encode() if fields is not None else None)
            response = conn.getresponse()
            return (response.status, {k.lower(): v for k, v in response.getheaders()},
                    response.read().decode("utf-8", "replace"))
        finally:
            conn.close()

    def form(self, page: str, action_ends: str) -> dict[str, str]:
        status, _, body = self.request("GET", page)
        assert status == 200, body
        parser = _Forms()
        parser.feed(body)
        found = [fields for action, fields in parser.forms if action.endswith(action_ends)]
        assert found, f"no form posting to {action_ends} on {page}"
        return found[0]


@pytest.fixture
def admin(site, tmp_path):
    site.service("news")
    server = ServeProcess(site, free_port(), tmp_path / "serve")
    server.start()
    yield Admin(server)
    server.stop()


@pytest.fixture
def trick(tmp_path) -> tuple[str, Path]:
    """A file whose name is an e-mail address, holding a shell script, and the
    marker it would create."""
    marker = tmp_path / "PWNED"
    folder = tmp_path / "trick"
    folder.mkdir()
    script = folder / "pwn@example.org"
    script.write_text(f"touch {marker}\n")
    script.chmod(0o755)
    return str(script), marker


def test_the_settings_form_offers_no_program_or_host_path(admin):
    fields = admin.form("/admin/settings", "/settings")
    for key in HOST_ONLY:
        assert key not in fields
    status, _, body = admin.request("GET", "/admin/settings")
    assert "/usr/sbin/sendmail" in body  # shown, read-only


@pytest.mark.parametrize("key, value", [("mail.sendmail_path", "/bin/bash"),
                                        ("mail.dkim_key_file", "/etc/shadow")])
def test_a_crafted_post_cannot_set_a_program_or_a_host_path(site, admin, key, value):
    before = site.data.settings.read_bytes()
    fields = admin.form("/admin/settings", "/settings")
    fields.update({"mail.transport": "sendmail", key: value})
    status, _, body = admin.request("POST", "/admin/settings", fields)
    assert status == 403, body
    assert key in body and "Traceback" not in body
    assert site.data.settings.read_bytes() == before


def test_a_from_address_naming_a_file_is_refused_everywhere(site, admin, trick):
    path, _ = trick
    before = site.data.settings.read_bytes()
    for key in ("mail.from_email", "mail.bounce_address", "admin_email", "mail.dev_redirect"):
        fields = admin.form("/admin/settings", "/settings")
        fields[key] = path
        status, _, body = admin.request("POST", "/admin/settings", fields)
        assert status == 400, (key, body)
        fields[key] = "-oQ/tmp@example.org"
        assert admin.request("POST", "/admin/settings", fields)[0] == 400, key
    assert site.data.settings.read_bytes() == before

    fields = admin.form("/admin/services/news", "/services/news")
    fields["from_email"] = path
    status, _, body = admin.request("POST", "/admin/services/news", fields)
    assert status == 400, body
    assert "/" not in site.settings()["mail.from_email"]

    for value in (path, "-f@example.org"):
        result = site.cli("settings", "set", "--", "mail.from_email", value, check=False)
        assert result.returncode == 1, value
        result = site.cli("service", "edit", "news", f"--from-email={value}", check=False)
        assert result.returncode == 1, value


def test_the_test_letter_runs_no_file_even_with_bash_set_by_hand(site, admin, trick):
    """The worst case left: settings.ini edited by hand (FTP) with bash as the
    program and the file as from_email. The address is refused when read, so
    the test letter hands bash no file of the attacker's: nothing runs."""
    path, marker = trick
    text = site.data.settings.read_text(encoding="utf-8")
    text = re.sub(r"(?m)^transport = .*$", "transport = sendmail", text)
    text = re.sub(r"(?m)^sendmail_path = .*$", "sendmail_path = /bin/bash", text)
    text = re.sub(r"(?m)^from_email = .*$", f"from_email = {path}", text)
    site.data.settings.write_text(text, encoding="utf-8")
    fields = admin.form("/admin/settings", "/settings/test")
    status, _, body = admin.request("POST", "/admin/settings/test", fields)
    assert status == 303, body
    assert not marker.exists(), "the file named by from_email ran as a shell script"
    assert "mail.from_email" in site.cli("status").stdout


def test_the_program_must_be_an_absolute_path_to_an_executable_file(site, tmp_path):
    plain = tmp_path / "not-executable"
    plain.write_text("#!/bin/sh\n")
    for value in ("bash", "sendmail", str(tmp_path / "missing"), str(plain), str(tmp_path)):
        result = site.cli("settings", "set", "mail.sendmail_path", value, check=False)
        assert result.returncode == 1, value
        assert "mail.sendmail_path" in result.stderr and len(result.stderr.splitlines()) == 1
    fake = _fake_sendmail(tmp_path)
    site.cli("settings", "set", "mail.sendmail_path", str(fake))
    assert site.settings()["mail.sendmail_path"] == str(fake)


def test_a_bad_program_in_settings_ini_is_reported_and_never_run(site, admin):
    text = site.data.settings.read_text(encoding="utf-8")
    text = re.sub(r"(?m)^transport = .*$", "transport = sendmail", text)
    text = re.sub(r"(?m)^sendmail_path = .*$", "sendmail_path = /nonexistent/sendmail", text)
    site.data.settings.write_text(text, encoding="utf-8")
    status = site.cli("status").stdout
    assert "mail.sendmail_path: /nonexistent/sendmail is not a file" in status
    status, headers, _ = admin.request("POST", "/admin/settings/test",
                                       admin.form("/admin/settings", "/settings/test"))
    assert status == 303
    status, _, body = admin.request("GET", headers["location"])
    assert "/nonexistent/sendmail is not a file" in body


def _fake_sendmail(folder: Path) -> Path:
    """A sendmail that records its arguments, one per line, and reads the letter."""
    record = folder / "argv.txt"
    fake = folder / "fake-sendmail"
    fake.write_text(f'#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done >> {record}\n'
                    f'echo --- >> {record}\ncat > /dev/null\n')
    fake.chmod(0o755)
    return fake


def test_sendmail_gets_the_envelope_after_f_and_the_recipient_after_dashes(site, tmp_path):
    fake = _fake_sendmail(tmp_path)
    site.service("lessons", letters=[("One", "0s", "Lesson one")])
    site.subscriber("lessons", "reader@example.org", ago=7200)
    site.subscriber("lessons", "-oQ@example.org", ago=7200)
    site.cli("settings", "set", "mail.sendmail_path", str(fake))
    site.cli("settings", "set", "mail.transport", "sendmail")
    site.cli("settings", "set", "mail.from_email", "list@example.org")
    site.cli("cron")
    calls = [c.strip().splitlines() for c in (tmp_path / "argv.txt").read_text().split("---") if c.strip()]
    assert calls, site.log()
    for argv in calls:
        assert argv[:2] == ["-i", "-f"] and argv[3] == "--" and len(argv) == 5, argv
        assert argv[2].endswith("@example.org") and not argv[2].startswith("-")
    assert [argv[4] for argv in calls] == ["reader@example.org"]


def test_a_hand_edited_service_sender_naming_a_file_is_never_handed_to_sendmail(site, tmp_path, trick):
    """service.ini edited by FTP: the run does not pass the address to the
    program, does not crash, and says why in the log; the letter waits."""
    path, marker = trick
    fake = _fake_sendmail(tmp_path)
    service = site.service("lessons", letters=[("One", "0s", "Lesson one")])
    site.subscriber("lessons", "reader@example.org", ago=7200)
    site.cli("settings", "set", "mail.sendmail_path", str(fake))
    site.cli("settings", "set", "mail.transport", "sendmail")
    ini = service.folder / "service.ini"
    ini.write_text(re.sub(r"(?m)^from_email = .*$", f"from_email = {path}", ini.read_text()))
    assert path in ini.read_text()
    result = site.cli("cron")
    assert "Traceback" not in result.stderr
    record = tmp_path / "argv.txt"
    assert not record.exists() or path not in record.read_text()
    assert "envelope sender" in site.log()
    assert site.subscribers("lessons")["reader@example.org"].sent == 0

"""Secrets on the command line.

`vykhukhol settings set mail.smtp_password P` printed the password back, and
the only ways to give a password were on the command line, where every user
of the host reads it in `ps` (/proc/<pid>/cmdline) and the shell keeps it in
its history. Now a secret (mail.smtp_password, mail.bounce_mailbox,
security.secret, the admin password of `init` and `password`) is typed at a
prompt that does not echo, read from standard input with `-`, or taken from
VYKHUKHOL_VALUE / VYKHUKHOL_PASSWORD, and no command prints it back.
Each case runs the real command in a subprocess.
"""

from __future__ import annotations

import fcntl
import os
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

from support.servetools import subprocess_env
from vykhukhol import settings as settings_mod
from vykhukhol.settings import password as auth

SMTP_SECRET = "Smtp-Secret-4711"
NEW_PASSWORD = "new-admin-password-0815"


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def test_a_secret_setting_is_never_printed_back(site):
    result = site.cli("settings", "set", "mail.smtp_password", SMTP_SECRET)
    assert SMTP_SECRET not in result.stdout + result.stderr
    assert "mail.smtp_password set" in result.stdout
    assert "ps" in result.stderr  # the note that the command line shows it
    assert site.settings()["mail.smtp_password"] == SMTP_SECRET
    shown = site.cli("settings", "get", "mail.smtp_password").stdout
    assert SMTP_SECRET not in shown and "(set)" in shown
    assert site.cli("settings", "get", "mail.smtp_password", "--show").stdout.strip() == SMTP_SECRET


def test_a_secret_read_from_standard_input_never_appears_in_the_process_list(site):
    """The command waits on its standard input: meanwhile its command line
    (what `ps` shows to everybody) holds no secret, and the value arrives anyway."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "vykhukhol", "--data", str(site.root), "settings", "set",
         "mail.smtp_password", "-"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=subprocess_env())
    try:
        time.sleep(0.3)
        assert SMTP_SECRET not in _cmdline(proc.pid)
        out, err = proc.communicate(SMTP_SECRET + "\n", timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert SMTP_SECRET not in out + err
    assert site.settings()["mail.smtp_password"] == SMTP_SECRET


def _run_with(site, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(site.root), *args],
                            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                            env=subprocess_env(**env))
    assert result.returncode == 0, result.stderr
    return result


def test_secrets_come_from_the_environment(site):
    result = _run_with(site, {"VYKHUKHOL_VALUE": SMTP_SECRET}, "settings", "set", "mail.smtp_password")
    assert SMTP_SECRET not in result.stdout + result.stderr
    assert site.settings()["mail.smtp_password"] == SMTP_SECRET

    result = _run_with(site, {"VYKHUKHOL_PASSWORD": NEW_PASSWORD}, "password")
    assert NEW_PASSWORD not in result.stdout + result.stderr
    assert auth.verify_password(NEW_PASSWORD, site.settings()["security.admin_password"])


def test_init_reads_the_admin_password_from_standard_input(tmp_path):
    cgi = tmp_path / "cgi"
    cgi.mkdir()
    root = tmp_path / "data"
    result = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(root), "init",
                             "--cgi-dir", str(cgi), "--password", "-"], input=NEW_PASSWORD + "\n",
                            capture_output=True, text=True, timeout=120, env=subprocess_env())
    assert result.returncode == 0, result.stderr
    assert NEW_PASSWORD not in result.stdout + result.stderr
    stored = settings_mod.load(root / "settings.ini")["security.admin_password"]
    assert auth.verify_password(NEW_PASSWORD, stored)


def test_the_old_password_option_still_works_and_says_it_is_visible(site):
    result = site.cli("password", "--password", NEW_PASSWORD)
    assert "visible" in result.stderr and NEW_PASSWORD not in result.stdout + result.stderr
    assert auth.verify_password(NEW_PASSWORD, site.settings()["security.admin_password"])


def test_a_secret_typed_at_the_prompt_is_not_echoed(site):
    """On a terminal (a real pseudo-terminal here) the value is asked for twice
    with echo off; the terminal shows the prompts, never the value."""
    master, slave = os.openpty()

    def take_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        [sys.executable, "-m", "vykhukhol", "--data", str(site.root), "settings", "set",
         "mail.smtp_password"],
        stdin=slave, stdout=slave, stderr=slave, env=subprocess_env(), preexec_fn=take_terminal)
    os.close(slave)
    seen = b""
    try:
        for prompt in (b"mail.smtp_password: ", b"again: "):
            deadline = time.monotonic() + 30
            while prompt not in seen and time.monotonic() < deadline:
                if select.select([master], [], [], 0.5)[0]:
                    seen += os.read(master, 1024)
            assert prompt in seen, seen
            os.write(master, SMTP_SECRET.encode() + b"\n")
        assert proc.wait(timeout=60) == 0
        while select.select([master], [], [], 0.2)[0]:
            try:
                chunk = os.read(master, 1024)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    finally:
        proc.kill()
        os.close(master)
    assert SMTP_SECRET.encode() not in seen, seen
    assert b"mail.smtp_password set" in seen
    assert site.settings()["mail.smtp_password"] == SMTP_SECRET

"""Two factors from the outside: turn them on as the owner does at the host
(``vykhukhol password --totp``, answering its prompt with the app's code) and
make the codes an authenticator app would show."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from typing import Any

import pyotp

from support.servetools import subprocess_env

URI = re.compile(r"otpauth://totp/\S+")
SECRET = re.compile(r"[?&]secret=([A-Z2-7]+)")


def secret_of(text: str) -> str:
    """The base32 secret in the otpauth:// URI in ``text``."""
    found = SECRET.search(text)
    assert found, text
    return found.group(1)


class Enrolled:
    """What ``password --totp`` printed: the secret, the URI, the recovery codes."""

    def __init__(self, out: str) -> None:
        self.out = out
        found = URI.search(out)
        assert found, out
        self.uri = found.group(0)
        self.secret = secret_of(self.uri)
        self.recovery = re.findall(r"^  ([a-z0-9]{5}-[a-z0-9]{5})$", out, re.MULTILINE)

    def code(self, steps_ahead: int = 0) -> str:
        """The app's code ``steps_ahead`` steps of 30 s from now (one ahead is
        still accepted, and is newer than a code used a moment ago)."""
        return pyotp.TOTP(self.secret).at(time.time() + 30 * steps_ahead)


def turn_on(site: Any, code_of=None, **env: str) -> tuple[subprocess.CompletedProcess, Enrolled | None]:
    """Run ``vykhukhol password --totp`` (``env``: more environment variables);
    read the URI it prints, answer with ``code_of(secret)`` (default: the
    right code now), return the run's result and what it printed."""
    process = subprocess.Popen(
        [sys.executable, "-m", "vykhukhol", "--data", str(site.root), "password", "--totp"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=subprocess_env(**env))
    assert process.stdout is not None
    seen = []
    for line in process.stdout:
        seen.append(line)
        if URI.search(line):
            break
    secret = secret_of("".join(seen))
    answer = (code_of or (lambda s: pyotp.TOTP(s).now()))(secret)
    out, err = process.communicate(answer + "\n", timeout=60)
    text = "".join(seen) + out
    result = subprocess.CompletedProcess(process.args, process.returncode, text, err)
    return result, (Enrolled(text) if process.returncode == 0 else None)

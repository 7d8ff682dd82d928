"""The subscribe form's fast path answers as the full app does, byte for byte.

``GET cgi/subscribe.py?service=NAME`` is answered by :mod:`vykhukhol.web.fast`
before the data directory's, the settings' and the services' machinery is
imported. Each case runs the real script as a CGI process, and the full app
(:func:`vykhukhol.web.cgi.make_app` and :func:`~vykhukhol.web.cgi.serve`) in
another process with the same environment; their answers must be the same
bytes, whether the fast path answered (it must, in the plain cases) or left
the request to the full app.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]
SCRIPT = CHECKOUT / "cgi" / "subscribe.py"
FULL = """
import os, sys
from vykhukhol.datadir import DataDir, locate
from vykhukhol.web.cgi import make_app, serve
serve(make_app("subscribe", DataDir(locate(None, os.path.dirname(sys.argv[1])))))
"""


def environ(site, query: str, method: str = "GET", **extra: str) -> dict[str, str]:
    return {"GATEWAY_INTERFACE": "CGI/1.1", "SERVER_NAME": "localhost", "SERVER_PORT": "80",
            "SERVER_PROTOCOL": "HTTP/1.1", "REQUEST_METHOD": method,
            "SCRIPT_NAME": "/cgi/subscribe.py", "SCRIPT_FILENAME": str(SCRIPT),
            "QUERY_STRING": query, "REMOTE_ADDR": "127.0.0.1", "PATH": os.environ["PATH"],
            "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
            "VYKHUKHOL_DATA": str(site.data.root), **extra}


def both(site, query: str, method: str = "GET", **extra: str) -> tuple[bytes, bytes, bool]:
    """(the script's answer, the full app's answer, whether the script's was the fast path)."""
    env = environ(site, query, method, **extra)
    script = subprocess.run([sys.executable, "-X", "importtime", str(SCRIPT)], env=env,
                            capture_output=True, timeout=60, cwd=SCRIPT.parent)
    assert script.returncode == 0, script.stderr.decode()[-2000:]
    full = subprocess.run([sys.executable, "-c", FULL, str(SCRIPT)], capture_output=True,
                          timeout=60, cwd=SCRIPT.parent,
                          env={**env, "PYTHONPATH": str(CHECKOUT / "lib")})
    assert full.returncode == 0, full.stderr.decode()[-2000:]
    fast = "vykhukhol.datadir" not in script.stderr.decode()
    return _unstamped(script.stdout), _unstamped(full.stdout), fast


def _unstamped(answer: bytes) -> bytes:
    """The answer less its form stamp's value (the time it was drawn, signed),
    which two processes a second apart draw differently; its length is kept."""
    import re

    return re.sub(rb'(name="ts" value=")[0-9]+\.[0-9a-f]+"', lambda m: m.group(1) + b"STAMP" + b'"', answer)


@pytest.fixture
def lists(site):
    site.service("news", title='Новости «Выхухоли» & <b>"1"</b>')
    site.service("plain")
    site.service("later", db="zeta", title="In the second DB")
    return site


@pytest.mark.parametrize("lang", ["ru", "en"])
@pytest.mark.parametrize("query", ["service=news", "service=plain", "service=later",
                                   "service=plain&service=news", "x=1&service=news&y=",
                                   "service=news&service="])
def test_the_plain_form_is_the_full_apps(lists, lang, query) -> None:
    lists.set(language=lang)
    ours, theirs, fast = both(lists, query)
    assert ours == theirs
    assert fast == (not query.endswith("service=")), query
    if fast:
        assert ours.startswith(b"Status: 200 OK\r\n")


def test_a_head_request_is_the_full_apps(lists) -> None:
    ours, theirs, fast = both(lists, "service=news", "HEAD")
    assert fast and ours == theirs and ours.endswith(b"\r\n\r\n")


def test_a_services_own_page_is_the_full_apps(lists) -> None:
    pages = lists.data.services / "main" / "news" / "pages"
    pages.mkdir()
    (pages / "subscribe.html").write_text("<p>{{ service.title }} {{ t('subscribe.name') }}</p>\n",
                                          encoding="utf-8")
    ours, theirs, fast = both(lists, "service=news")
    assert fast and ours == theirs and b"<p>" in ours


@pytest.mark.parametrize("case", ["no such service", "a bad name", "an escape", "https",
                                  "a proxy's scheme", "no secret", "a short secret",
                                  "an odd language", "a continued line", "a broken service.ini",
                                  "a form asking for fields"])
def test_what_the_fast_path_leaves_is_the_full_apps(lists, case) -> None:
    query, extra = "service=news", {}
    settings_ini = lists.data.settings
    if case == "no such service":
        query = "service=nosuch"
    elif case == "a bad name":
        query = "service=News"
    elif case == "an escape":
        query = "service=n%65ws"
    elif case == "https":
        extra = {"HTTPS": "on"}
    elif case == "a proxy's scheme":
        extra = {"HTTP_X_FORWARDED_PROTO": "https"}
    elif case == "no secret":
        settings_ini.write_text(settings_ini.read_text(encoding="utf-8").replace(
            "secret = ", "secret_was = "), encoding="utf-8")
    elif case == "a short secret":
        lines = [("secret = short" if line.startswith("secret =") else line)
                 for line in settings_ini.read_text(encoding="utf-8").splitlines()]
        settings_ini.write_text("\n".join(lines) + "\n", encoding="utf-8")
    elif case == "an odd language":
        settings_ini.write_text(settings_ini.read_text(encoding="utf-8").replace(
            "language = ", "language = de\n#"), encoding="utf-8")
    elif case == "a continued line":
        settings_ini.write_text(settings_ini.read_text(encoding="utf-8").replace(
            "[main]\n", "[main]\nnote = one\n  two\n"), encoding="utf-8")
    elif case == "a broken service.ini":
        ini = lists.data.services / "main" / "news" / "service.ini"
        ini.write_text(ini.read_text(encoding="utf-8") + "[service]\n", encoding="utf-8")
    elif case == "a form asking for fields":
        lists.ok("field", "add", "city", "--type", "text")
        lists.ok("service", "edit", "news", "--form-fields", "city")
    ours, theirs, fast = both(lists, query, **extra)
    assert not fast, case
    if case == "a form asking for fields":
        assert b'name="f.city"' in ours
    assert ours == theirs, case

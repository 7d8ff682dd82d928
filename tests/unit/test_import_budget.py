"""Each CGI path imports only what it uses (docs/design/startup.md#startup-budget-test): a page of a CGI
process pays for every module it imports, on every request.

Each path runs as the web server starts it (the real script of cgi/, a CGI
environment, a real data directory) under ``python -X importtime``, and fails
when it imports a module outside its allowed list, or any of the modules it
must never need. A change that makes a path import something new fails here:
either import it lazily where it is needed, or, when the path truly needs it,
add it to the list with the reason in the commit.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

import pytest

from vykhukhol import sender, tokens
from vykhukhol.sender import idle

CHECKOUT = Path(__file__).resolve().parents[2]
FAR = "3650d"

# Ours on every path (what the interpreter loads by itself, `python -c pass`,
# is measured and allowed as well: a site's .pth files are not ours to judge).
START = {"vykhukhol", "vykhukhol.web", "vykhukhol.web.cgi", "__future__", "encodings.ascii",
         "encodings.latin_1", "pwd"}

# The idle cron tick: the proof, the round robin, one line of log.
IDLE = START | {
    "vykhukhol.sender", "vykhukhol.sender.idle", "math", "_datetime", "datetime", "vykhukhol.errors", "vykhukhol.timeutil",
    "itertools", "keyword", "operator", "_operator", "reprlib", "_collections", "collections",
    "types", "_functools", "functools", "contextlib", "vykhukhol.files", "vykhukhol.files.modes",
    "vykhukhol.files.appends", "vykhukhol.files.locks", "vykhukhol.files.rewrite", "fcntl",
    "vykhukhol.files.runlog", "vykhukhol.web.headers", "vykhukhol.sender.rotation", "vykhukhol.files.kv",
}

# A GET page: the data directory, the settings, the service, the page drawn in
# its language. (pathlib, with fnmatch, urllib.parse and ipaddress, comes with
# datadir, whose paths are Paths.)
# Every page a person opens asks whether the cron has stopped (watch.cronwatch:
# a stat and the small state/cron file).
PAGE = IDLE - {"vykhukhol.sender", "vykhukhol.sender.idle", "fcntl", "vykhukhol.files.runlog",
               "vykhukhol.sender.rotation"} | {
    "vykhukhol.watch", "vykhukhol.watch.cronwatch",
    "enum", "_sre", "re._constants", "re._parser", "re._casefix", "re._compiler", "copyreg", "re",
    "collections.abc", "warnings", "importlib", "fnmatch",
    "_winapi", "nt", "ntpath", "errno", "urllib", "ipaddress", "urllib.parse", "pathlib",
    "vykhukhol.datadir", "vykhukhol.web.response", "vykhukhol.web.http", "configparser",
    "vykhukhol.addresses", "vykhukhol.services", "vykhukhol.services.catalog",
    "vykhukhol.services.series", "_struct", "struct", "binascii",
    "vykhukhol.settings", "vykhukhol.settings.keys", "vykhukhol.i18n", "vykhukhol.web.templating",
    "vykhukhol.web.plain_templates",
    "vykhukhol.web.subscription", "vykhukhol.web.headers",
}
# A link page checks its signature too (hmac, hashlib, base64 for the token).
LINK_PAGE = PAGE | {"vykhukhol.tokens", "_hashlib", "_blake2", "hashlib", "hmac", "base64"}

# A subscribe POST: the subscriber file under its record lock (flock), the
# hourly counter, the next-due summary; the confirmation letter is composed and
# sent after the answer, and pays for the e-mail package and Jinja2 then.
# (dataclasses and typing come with the subscriber records, states and clients.)
POST_SOON = LINK_PAGE | {
    "unicodedata", "vykhukhol.members.membership", "vykhukhol.services.subscribers", "vykhukhol.states",
    "vykhukhol.members", "vykhukhol.members.unsent", "vykhukhol.services.due_summary",
    "vykhukhol.files.kv", "vykhukhol.services.rules", "vykhukhol.web.clients", "fcntl",
    "vykhukhol.members.suppression", "mmap",  # a suppressed address is answered alike but stores nothing
    "_ast", "ast", "_opcode", "opcode", "dis", "importlib.machinery", "token", "tokenize",
    "linecache", "inspect", "dataclasses", "_typing", "typing", "_weakrefset", "weakref", "copy",
    "org", "org.python", "org.python.core", "gettext",
}

# Never on these paths: what the issue names, and the heavy machinery of others.
NEVER_ON_A_PAGE = {"jinja2", "markupsafe", "email", "filelock", "tempfile", "shutil", "wsgiref",
                   "traceback", "vykhukhol.render", "vykhukhol.sender.runtime", "vykhukhol.mail",
                   "vykhukhol.members.membership", "vykhukhol.services.subscribers", "dkim", "dns", "multipart",
                   "logging", "threading", "decimal"}
# ... nor, on a GET page, what only a writer needs.
NEVER_ON_A_GET = NEVER_ON_A_PAGE | {"dataclasses", "inspect", "typing", "secrets", "random",
                                   "copy", "locale", "gettext"}
NEVER_ON_THE_TICK = NEVER_ON_A_PAGE | {"pathlib", "dataclasses", "typing", "re", "inspect",
                                       "configparser", "vykhukhol.settings", "vykhukhol.settings.keys",
                                       "vykhukhol.services", "vykhukhol.datadir"}


# The script run as itself, but with a line "ANSWERED" on stderr once the answer
# is written and flushed: -X importtime writes there too, in order, so the
# modules above that line are the ones the visitor waited for.
MARKED = """
import sys
import vykhukhol.web.cgi as gateway
served = gateway.serve
def serve(app):
    served(app)
    print("ANSWERED", file=sys.stderr, flush=True)
gateway.serve = serve
script = sys.argv[1]
with open(script, encoding="utf-8") as source:
    code = compile(source.read(), script, "exec")
exec(code, {"__name__": "__main__", "__file__": script})
"""


def imported(script: str, data_root: Path, method: str = "GET", query: str = "",
             body: bytes = b"", until_answer: bool = False) -> tuple[list[str], bytes]:
    """The modules one CGI request imports, in order, and its answer; with
    ``until_answer``, only those imported before the answer was flushed."""
    path = CHECKOUT / "cgi" / script
    environ = {
        "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_NAME": "localhost", "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1", "REQUEST_METHOD": method, "SCRIPT_NAME": f"/cgi/{script}",
        "SCRIPT_FILENAME": str(path), "QUERY_STRING": query, "REMOTE_ADDR": "127.0.0.1",
        "PATH": os.environ["PATH"], "PYTHONPATH": "", "PYTHONNOUSERSITE": "1",
        "VYKHUKHOL_DATA": str(data_root),
    }
    if method == "POST":
        environ.update(CONTENT_TYPE="application/x-www-form-urlencoded",
                       CONTENT_LENGTH=str(len(body)))
    command = [sys.executable, "-X", "importtime", str(path)]
    if until_answer:
        environ["PYTHONPATH"] = str(CHECKOUT / "lib")
        command[3:] = ["-c", MARKED, str(path)]
    done = subprocess.run(command, env=environ, input=body, capture_output=True,
                          cwd=path.parent, timeout=60)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    lines = done.stderr.decode().splitlines()
    if until_answer:
        assert "ANSWERED" in lines, lines[-20:]
        lines = lines[:lines.index("ANSWERED")]
    names = [line.rsplit("|", 1)[1].strip() for line in lines
             if line.startswith("import time:") and "self [us]" not in line]
    assert "site" in names
    return names, done.stdout


@functools.lru_cache(maxsize=1)
def interpreter_start() -> frozenset[str]:
    """What ``python -X importtime -c pass`` imports: the floor, not ours."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"], capture_output=True,
                          text=True, env={"PATH": os.environ["PATH"], "PYTHONNOUSERSITE": "1"},
                          check=True)
    return frozenset(line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
                     if line.startswith("import time:") and "self [us]" not in line)


def within(names: list[str], allowed: set[str], never: set[str]) -> None:
    """``names`` are all allowed, and none is forbidden."""
    ours = [n for n in names if n not in interpreter_start()]
    forbidden = {n for n in ours if n in never or n.split(".")[0] in never}
    assert not forbidden, f"imports it must never need: {sorted(forbidden)}"
    extra = [n for n in ours if n not in allowed]
    assert not extra, f"imports outside its allowed list: {extra}"


@pytest.fixture
def pages_site(site):
    site.service("news")
    site.subscriber("news", "known@example.org")
    return site


def link(site, purpose: str) -> str:
    secret = site.settings().secret
    return urlencode({"s": "news", "e": "known@example.org",
                      "t": tokens.make(secret, "news", "known@example.org", purpose)})


def test_the_subscribe_form(pages_site) -> None:
    names, out = imported("subscribe.py", pages_site.data.root, query="service=news")
    assert b"Status: 200" in out and b'name="email"' in out
    within(names, PAGE, NEVER_ON_A_GET)


@pytest.mark.parametrize("purpose", ["confirm", "unsubscribe"])
def test_a_link_page(pages_site, purpose: str) -> None:
    names, out = imported(f"{purpose}.py", pages_site.data.root, query=link(pages_site, purpose))
    assert b"Status: 200" in out and b'<form method="post"' in out
    within(names, LINK_PAGE, NEVER_ON_A_GET)


def test_a_subscribe_post_until_its_answer(pages_site) -> None:
    """Up to the answer: what the letter needs comes after it (see POST_SOON)."""
    body = urlencode({"service": "news", "email": "new@example.org"}).encode()
    names, out = imported("subscribe.py", pages_site.data.root, "POST", body=body, until_answer=True)
    assert b"Status: 200" in out and pages_site.subscribers("news")["new@example.org"]
    within(names, POST_SOON, NEVER_ON_A_PAGE - {"vykhukhol.members.membership", "vykhukhol.services.subscribers"})


def test_the_idle_cron_tick(site, monkeypatch) -> None:
    monkeypatch.setattr(idle, "RACY", 0.0)  # the proof may be built on files just written
    site.service("quiet", letters=[("Lesson 1", FAR, "Hello.\n")])
    site.subscriber("quiet", "waiting@example.org")
    sender.run(site.data, site.settings())
    names, out = imported("cron.py", site.data.root)
    assert b"nothing due before" in out
    within(names, IDLE, NEVER_ON_THE_TICK)


# The subscriber's own page (cgi/manage.py): a link page that reads the
# address's line in every subscriber file (the subscriber format, its state
# and the pause). dataclasses (with inspect) and typing come with the
# subscriber records and states, as on the POST.
MANAGE_PAGE = LINK_PAGE | {
    "vykhukhol.members", "vykhukhol.members.personal", "vykhukhol.services.subscribers",
    "vykhukhol.states", "vykhukhol.services.due_summary", "vykhukhol.files.kv",
    "unicodedata", "_ast", "ast", "_opcode", "opcode", "dis", "importlib.machinery", "token",
    "tokenize", "linecache", "inspect", "dataclasses", "_typing", "typing", "_weakrefset",
    "weakref", "copy", "org", "org.python", "org.python.core",
}


def test_the_own_page(pages_site) -> None:
    """GET cgi/manage.py with a signed link: no Jinja2, no e-mail package, no
    subscription machinery (membership), no lock: it only reads."""
    query = urlencode({"e": "known@example.org", "t": tokens.make_for_address(
        pages_site.settings().secret, "known@example.org", "manage")})
    names, out = imported("manage.py", pages_site.data.root, query=query)
    assert b"Status: 200" in out and b"known@example.org" in out
    within(names, MANAGE_PAGE, NEVER_ON_A_PAGE - {"vykhukhol.services.subscribers"})


# A counted link of a letter (cgi/go.py, docs/using/clicks.md#clicks): a link page that reads its
# letter's stored links (files.clicklinks, the click files' one format, shared
# with newsletters.clicks; it imports nothing new); the click's line is appended
# after the answer, under the record lock (fcntl).
GO_PAGE = LINK_PAGE | {"vykhukhol.web.go", "vykhukhol.files.clicklinks"}
GO_AFTER = GO_PAGE | {"fcntl"}


def test_a_counted_link(pages_site) -> None:
    """GET cgi/go.py: the 302 before the click is written, no newsletter jobs
    (the package's face), no rewriting machinery, no typing."""
    from vykhukhol.newsletters import clicks

    secret = pages_site.settings().secret
    clicks.prepare(pages_site.data, "https://lists.example.org", secret, "20261201-090000-abcdef",
                   "See https://example.org/a", None)
    query = urlencode({"l": "20261201-090000-abcdef", "n": "1",
                       "t": tokens.click_token(secret, "20261201-090000-abcdef", 1)})
    names, out = imported("go.py", pages_site.data.root, query=query, until_answer=True)
    assert b"Status: 302" in out and b"Location: https://example.org/a" in out
    within(names, GO_PAGE, NEVER_ON_A_GET | {"vykhukhol.newsletters"})
    names, out = imported("go.py", pages_site.data.root, query=query)
    within(names, GO_AFTER, NEVER_ON_A_GET | {"vykhukhol.newsletters"})
    counted = pages_site.data.click_file("20261201-090000-abcdef", "counts").read_text()
    assert counted.count("\t1\n") == 2

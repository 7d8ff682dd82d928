"""The start-up budget, held at one boundary (docs/design/startup.md#startup-boundary).

Only three kinds of process must start fast, because each is a new Python
process that pays for every module it imports: the idle cron tick
(cgi/cron.py with nothing due), the public pages (cgi/subscribe.py GET and
POST, confirm.py, unsubscribe.py, manage.py) and a counted link (cgi/go.py).
The modules those paths may run are :data:`BOUNDARY`, named here and nowhere
else; a module outside it is free to import at its top and to use
dataclasses, enums and typing, and no fast path may import it.

Each path runs as the web server starts it (the real script of cgi/, a CGI
environment, a real data directory) under ``python -X importtime``, and fails
when it imports one of our modules outside the boundary, any module outside
its own allowed list, or one it must never need. A change that makes a path
import something new fails here: import it where it is needed, off the path,
or, when the path truly needs it, add it to the list with the reason in the
commit. (Modules loaded by ``importlib.import_module`` are invisible to
``-X importtime``: the paths load their app with ``__import__``.)
"""

from __future__ import annotations

import functools
import importlib.util
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

# The boundary: every module of ours a fast path may import. Each stays light
# (no dataclasses, enum, typing, pathlib or re at the top unless the lists
# below allow it) because one of the paths runs it.
BOUNDARY = frozenset({
    "vykhukhol", "vykhukhol.web", "vykhukhol.web.cgi", "vykhukhol.web.headers",
    # the idle tick: the proof, the round robin, one line of the run log
    "vykhukhol.sender", "vykhukhol.sender.idle", "vykhukhol.sender.rotation",
    "vykhukhol.errors", "vykhukhol.timeutil",
    "vykhukhol.files", "vykhukhol.files.modes", "vykhukhol.files.appends", "vykhukhol.files.locks",
    "vykhukhol.files.rewrite", "vykhukhol.files.kv", "vykhukhol.files.runlog",
    # a page: the request, the data directory, settings.ini, the service, the page drawn
    "vykhukhol.web.http", "vykhukhol.web.response", "vykhukhol.web.templating",
    "vykhukhol.web.plain_templates", "vykhukhol.web.subscription", "vykhukhol.datadir",
    # each page's plain form, its own module, loaded when that page is drawn
    *(f"vykhukhol.web.plain_templates.{page}_page" for page in (
        "message", "button", "subscribe", "manage", "manage_ask", "manage_note")),
    "vykhukhol.addresses", "vykhukhol.i18n", "vykhukhol.settings", "vykhukhol.settings.keys",
    "vykhukhol.settings.values",
    "vykhukhol.services", "vykhukhol.services.catalog", "vykhukhol.services.series",
    "vykhukhol.watch", "vykhukhol.watch.cronwatch", "vykhukhol.tokens",
    # a subscribe POST: the subscriber file under its lock, the counter, the due summary
    "vykhukhol.web.clients", "vykhukhol.members", "vykhukhol.members.membership",
    "vykhukhol.members.suppression", "vykhukhol.members.unsent", "vykhukhol.services.subscribers",
    "vykhukhol.services.subscriber_line",  # the subscriber's line, the record it reads as
    "vykhukhol.services.due_summary", "vykhukhol.services.rules", "vykhukhol.states",
    "vykhukhol.files.events",  # the webhooks' journal: one stat when none is configured
    # the subscriber's own page, and a counted link
    "vykhukhol.web.manage", "vykhukhol.members.personal", "vykhukhol.web.go",
    "vykhukhol.files.clicklinks",
    # the public forms' defences against bots: the signed form stamp; after a
    # POST's answer the per-address cap and the alarm's held requests (the
    # puzzle, when on, brings vykhukhol.web.challenge and the altcha library:
    # off these paths)
    "vykhukhol.web.bots", "vykhukhol.members.held",
    # the subscribe form's fast path: its own locator and the light ini reader
    "vykhukhol.web.fast", "vykhukhol.files.ini",
    # the records of a subscribe POST and the own page: named tuples without typing
    "vykhukhol.records",
    # the work after a subscribe POST's answer: the lookup, the line, the default
    # confirmation request written as bytes (no e-mail package, no Jinja2)
    "vykhukhol.web.joining", "vykhukhol.returntag", "vykhukhol.mail", "vykhukhol.mail.confirm_letter",
    "vykhukhol.mail.quick_letter", "vykhukhol.mail.header_values", "vykhukhol.mail.outbox_files",
    "vykhukhol.mail.plain_letters", "vykhukhol.mail.texts", "vykhukhol.mail.failures",
    "vykhukhol.mail.senders",
})

# Ours on every path (what the interpreter loads by itself, `python -c pass`,
# is measured and allowed as well: a site's .pth files are not ours to judge).
START = {"vykhukhol", "vykhukhol.web", "vykhukhol.web.cgi", "__future__", "encodings.ascii",
         "encodings.latin_1", "pwd"}

# The idle cron tick: the proof, the round robin, one line of log; of the
# standard library only datetime (with math and operator) and fcntl.
IDLE = START | {
    "vykhukhol.sender", "vykhukhol.sender.idle", "vykhukhol.sender.rotation", "vykhukhol.errors",
    "vykhukhol.timeutil", "vykhukhol.files", "vykhukhol.files.modes", "vykhukhol.files.appends",
    "vykhukhol.files.locks", "vykhukhol.files.rewrite", "vykhukhol.files.kv",
    "vykhukhol.files.runlog", "vykhukhol.web.headers",
    "math", "_datetime", "datetime", "operator", "_operator", "fcntl",
}

# A page a visitor opens turns the cyclic collector off first (web.cgi's
# SHORT_LIVED): a built-in module, no file read.
SHORT_LIVED = {"gc"}

# What every page reads: the request, the data directory, the settings, the
# service. (pathlib, with fnmatch, urllib.parse and ipaddress, comes with
# datadir, whose paths are Paths; re and enum with it. settings.ini and
# service.ini are read by the light ini reader: configparser only for a file
# outside its part.)
READ = IDLE - {"vykhukhol.sender", "vykhukhol.sender.idle", "fcntl", "vykhukhol.files.runlog",
               "vykhukhol.sender.rotation", "vykhukhol.files.kv"} | {
    "vykhukhol.datadir", "vykhukhol.web.response", "vykhukhol.web.http", "vykhukhol.addresses",
    "vykhukhol.services", "vykhukhol.services.catalog", "vykhukhol.services.series",
    "vykhukhol.settings", "vykhukhol.settings.keys", "vykhukhol.settings.values", "vykhukhol.i18n",
    "vykhukhol.web.templating",
    "vykhukhol.web.subscription",
    "itertools", "keyword", "reprlib", "_collections", "collections", "types", "_functools",
    "functools", "enum", "_sre", "re._constants", "re._parser", "re._casefix", "re._compiler",
    "copyreg", "re", "collections.abc", "warnings", "fnmatch", "_winapi", "nt", "ntpath", "errno",
    "urllib", "ipaddress", "urllib.parse", "pathlib", "vykhukhol.files.ini",
} | SHORT_LIVED
# The subscribe form (GET cgi/subscribe.py?service=NAME), answered by the fast
# path (web.fast): the data directory found with os.path, settings.ini and
# service.ini read by the light ini reader, the page drawn in its language
# (the catalog read with struct, the page's stamps checked with binascii),
# and the cron watch (a stat and state/cron, with datetime). None of what
# the full readers need: pathlib, urllib, ipaddress, re, enum, collections,
# functools, configparser.
FORM = START | {
    "vykhukhol.web.fast", "vykhukhol.files.ini", "vykhukhol.errors", "vykhukhol.files",
    "vykhukhol.files.modes", "vykhukhol.files.appends", "vykhukhol.files.locks",
    "vykhukhol.files.rewrite", "vykhukhol.files.kv", "vykhukhol.i18n", "vykhukhol.timeutil",
    "vykhukhol.watch", "vykhukhol.watch.cronwatch", "vykhukhol.web.headers",
    "vykhukhol.web.plain_templates", "vykhukhol.web.plain_templates.subscribe_page",
    "vykhukhol.web.response", "vykhukhol.web.templating",
    "math", "_datetime", "datetime", "operator", "_operator", "_struct", "struct", "binascii",
    "vykhukhol.web.bots", "vykhukhol.tokens", "_sha256",  # the form's signed stamp
} | SHORT_LIVED

# A page a person opens: drawn in its language (the catalog read with struct,
# the plain pages' stamps checked with binascii), and asking whether the cron
# has stopped (watch.cronwatch: a stat and the small state/cron file).
PAGE = READ | {"vykhukhol.web.plain_templates", "vykhukhol.web.plain_templates.message_page",
               "vykhukhol.web.plain_templates.button_page", "_struct", "struct", "binascii",
               "vykhukhol.watch", "vykhukhol.watch.cronwatch", "vykhukhol.files.kv"}
# A link page checks its signature too (the interpreter's own SHA-256, not
# OpenSSL's through hashlib and hmac).
SIGNED = {"vykhukhol.tokens", "_sha256"}
LINK_PAGE = PAGE | SIGNED

# The subscriber records and states that the own page and a POST read: a
# plain class, named tuples without typing (vykhukhol.records), an enum.
RECORDS = {"vykhukhol.states", "vykhukhol.records"}

# A subscribe POST until its answer: a GET page's, and one count of the
# client's hourly cap (web.clients, the counter file under fcntl's lock). The
# subscriber file is read, the address stored and its letter sent after the
# answer (web.joining): none of that machinery is loaded before it.
POST_SOON = PAGE | SIGNED | {"vykhukhol.web.clients", "fcntl",
                              "vykhukhol.web.bots"}  # the form stamp, checked before the answer

# Never on these paths: the heavy machinery of others.
NEVER_ON_A_PAGE = {"jinja2", "markupsafe", "email", "filelock", "tempfile", "shutil", "wsgiref",
                   "traceback", "vykhukhol.render", "vykhukhol.sender.runtime", "vykhukhol.mail",
                   "vykhukhol.members.membership", "vykhukhol.services.subscribers", "dkim", "dns", "multipart",
                   "vykhukhol.services.subscriber_line",
                   "logging", "threading", "decimal"}
# ... nor, on a GET page, what only a writer needs.
NEVER_ON_A_GET = NEVER_ON_A_PAGE | {"_hashlib", "hashlib", "hmac", "dataclasses", "inspect",
                                   "typing", "secrets", "random", "copy", "locale", "gettext",
                                   "importlib", "configparser"}
# ... nor, on the subscribe form, what the full readers need.
NEVER_ON_THE_FORM = NEVER_ON_A_GET | {
    "pathlib", "re", "enum", "collections", "functools", "configparser", "urllib", "ipaddress",
    "fnmatch", "vykhukhol.datadir", "vykhukhol.settings", "vykhukhol.services",
    "vykhukhol.web.http", "vykhukhol.web.subscription"}
NEVER_ON_THE_TICK = NEVER_ON_A_PAGE | {"collections", "contextlib", "functools", "pathlib",
                                       "dataclasses", "typing", "re", "enum", "inspect",
                                       "configparser", "vykhukhol.settings", "vykhukhol.settings.keys",
                                       "vykhukhol.settings.values",
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


# How many modules each path may import beyond the interpreter's own start
# (what it imports today): a new import fails here even when it is on the
# path's list, say one a list allows for another reason.
# (gc, built in, on every public page: the collector turned off.)
MOST = {"GET subscribe": 33,  # 29, the form stamp (web.bots, tokens, _sha256) and gc
        "POST subscribe": 69, "POST subscribe, whole": 99, "link page": 68, "idle tick": 24,
        "own page": 76, "counted link": 64}


def within(names: list[str], allowed: set[str], never: set[str], path: str) -> None:
    """``names`` are all allowed, none is forbidden, and they are no more than
    ``MOST[path]``."""
    ours = [n for n in names if n not in interpreter_start()]
    assert len(set(ours)) <= MOST[path], f"{path}: {len(set(ours))} modules, at most {MOST[path]}"
    outside = [n for n in ours if n.split(".")[0] == "vykhukhol" and n not in BOUNDARY]
    assert not outside, f"runs modules outside the start-up boundary: {outside}"
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
    within(names, FORM, NEVER_ON_THE_FORM, "GET subscribe")


@pytest.mark.parametrize("purpose", ["confirm", "unsubscribe"])
def test_a_link_page(pages_site, purpose: str) -> None:
    names, out = imported(f"{purpose}.py", pages_site.data.root, query=link(pages_site, purpose))
    assert b"Status: 200" in out and b'<form method="post"' in out
    within(names, LINK_PAGE, NEVER_ON_A_GET, "link page")


def test_a_subscribe_post_until_its_answer(pages_site) -> None:
    """Up to the answer: what the letter needs comes after it (see POST_SOON)."""
    body = urlencode({"service": "news", "email": "new@example.org"}).encode()
    names, out = imported("subscribe.py", pages_site.data.root, "POST", body=body, until_answer=True)
    assert b"Status: 200" in out and pages_site.subscribers("news")["new@example.org"]
    within(names, POST_SOON, NEVER_ON_A_GET | {"vykhukhol.members", "vykhukhol.services.subscribers",
                                               "vykhukhol.web.joining", "vykhukhol.states"},
           "POST subscribe")


# The work after a subscribe post's answer (web.joining): the lookup, the new
# line and the letter, with the e-mail package but without Jinja2, which the
# default confirmation request does not need (mail.confirm_letter).
AFTER_THE_ANSWER = """
import sys
from vykhukhol import settings
from vykhukhol.datadir import DataDir
from vykhukhol.web.joining import join
data = DataDir(sys.argv[1])
join(data, settings.load(data.settings), "news", "later@example.org", "", "127.0.0.1", True)
print(" ".join(sorted(n for n in sys.modules if n in NEVER or n.split(".")[0] in NEVER)))
"""


def test_a_subscribe_posts_letter_is_written_without_jinja(pages_site) -> None:
    never = {"jinja2", "markupsafe", "vykhukhol.render", "vykhukhol.mail.compose"}
    done = subprocess.run([sys.executable, "-c", f"NEVER = {sorted(never)!r}\n{AFTER_THE_ANSWER}",
                           str(pages_site.data.root)], capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ["PATH"], "PYTHONPATH": str(CHECKOUT / "lib"),
                               "PYTHONNOUSERSITE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == [], f"imported after the answer: {done.stdout}"
    assert pages_site.subscribers("news")["later@example.org"]
    assert any(b"later@example.org" in path.read_bytes() for path in pages_site.data.outbox.glob("*.eml"))


def test_a_subscribe_posts_letter_goes_to_the_outbox_without_the_e_mail_package(pages_site) -> None:
    """With the outbox transport the default request is written as bytes
    (mail.quick_letter): no e-mail package, nor what it brings; the records
    it reads are no dataclasses, so neither dataclasses nor inspect either."""
    never = {"email", "socket", "calendar", "locale", "smtplib", "vykhukhol.mail.message",
             "vykhukhol.mail.transport", "vykhukhol.mail.headers", "dataclasses", "inspect"}
    done = subprocess.run([sys.executable, "-c", f"NEVER = {sorted(never)!r}\n{AFTER_THE_ANSWER}",
                           str(pages_site.data.root)], capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ["PATH"], "PYTHONPATH": str(CHECKOUT / "lib"),
                               "PYTHONNOUSERSITE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == [], f"imported after the answer: {done.stdout}"
    letter, = (path.read_bytes() for path in pages_site.data.outbox.glob("*.eml")
               if b"later@example.org" in path.read_bytes())
    assert letter.startswith(b"Return-Path: <") and b"\r\nMIME-Version: 1.0\r\n" in letter


# The whole subscribe POST: the script as the web server runs it, but with its
# error stream kept open after the answer (where -X importtime writes), so the
# imports of the work after the answer (web.joining, in the child that does it)
# are seen too: the lookup, the new line and the default confirmation request
# written as bytes. Their named tuples come without typing (vykhukhol.records),
# their hashes without OpenSSL (tokens' SHA-256, the interpreter's BLAKE2s).
WHOLE = MARKED.replace("gateway.serve = serve", """gateway.serve = serve
import os
def end_answer():
    quiet = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(quiet, fd)
    os.close(quiet)
gateway._end_answer = end_answer""")
POST_AFTER = POST_SOON | {
    "vykhukhol.web.joining", "vykhukhol.members", "vykhukhol.files.events",
    "vykhukhol.records", "vykhukhol.members.unsent", "vykhukhol.services.due_summary",
    "vykhukhol.states", "vykhukhol.services.subscribers", "vykhukhol.services.rules",
    "vykhukhol.services.subscriber_line",
    "vykhukhol.members.membership", "vykhukhol.members.suppression", "mmap",
    "vykhukhol.members.held", "vykhukhol.mail", "base64", "_blake2", "vykhukhol.returntag",
    "vykhukhol.mail.outbox_files", "vykhukhol.mail.plain_letters", "vykhukhol.mail.header_values",
    "vykhukhol.mail.quick_letter", "vykhukhol.mail.texts", "vykhukhol.mail.failures",
    "vykhukhol.mail.senders", "vykhukhol.mail.confirm_letter",
    "gc"}  # built in: frozen before the fork that does the work (web.cgi)
NEVER_AFTER_THE_ANSWER = NEVER_ON_A_GET - {"vykhukhol.mail", "vykhukhol.members.membership",
                                           "vykhukhol.services.subscribers", "vykhukhol.services.subscriber_line"} | {
    "contextlib", "socket", "calendar", "vykhukhol.mail.compose", "vykhukhol.mail.message",
    "unicodedata"}  # a printable name and subject read none of Unicode's tables
# Modules the work after the answer adds to the answer's (struct with base64,
# for the bounce address's tag: the answer no longer loads it for the catalog).
MOST_AFTER_THE_ANSWER = 30


def test_the_whole_subscribe_post(pages_site) -> None:
    body = urlencode({"service": "news", "email": "whole@example.org", "name": "Анна"}).encode()
    environ = {
        "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_NAME": "localhost", "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1", "REQUEST_METHOD": "POST", "SCRIPT_NAME": "/cgi/subscribe.py",
        "SCRIPT_FILENAME": str(CHECKOUT / "cgi" / "subscribe.py"), "QUERY_STRING": "",
        "REMOTE_ADDR": "127.0.0.1", "PATH": os.environ["PATH"], "PYTHONNOUSERSITE": "1",
        "PYTHONPATH": str(CHECKOUT / "lib"), "VYKHUKHOL_DATA": str(pages_site.data.root),
        "CONTENT_TYPE": "application/x-www-form-urlencoded", "CONTENT_LENGTH": str(len(body))}
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", WHOLE,
                           str(CHECKOUT / "cgi" / "subscribe.py")], env=environ, input=body,
                          capture_output=True, cwd=CHECKOUT / "cgi", timeout=60)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    lines = done.stderr.decode().splitlines()
    names = [line.rsplit("|", 1)[1].strip() for line in lines
             if line.startswith("import time:") and "self [us]" not in line]
    after = [line.rsplit("|", 1)[1].strip() for line in lines[lines.index("ANSWERED"):]
             if line.startswith("import time:")]
    assert pages_site.subscribers("news")["whole@example.org"]
    assert any(b"whole@example.org" in path.read_bytes() for path in pages_site.data.outbox.glob("*.eml"))
    assert len(set(after)) <= MOST_AFTER_THE_ANSWER, f"after the answer: {after}"
    assert "vykhukhol.members.membership" in after, "the subscriber file was read before the answer"
    within(names, POST_AFTER, NEVER_AFTER_THE_ANSWER, "POST subscribe, whole")


def test_the_idle_cron_tick(site, monkeypatch) -> None:
    monkeypatch.setattr(idle, "RACY", 0.0)  # the proof may be built on files just written
    site.service("quiet", letters=[("Lesson 1", FAR, "Hello.\n")])
    site.subscriber("quiet", "waiting@example.org")
    sender.run(site.data, site.settings())
    names, out = imported("cron.py", site.data.root)
    assert b"nothing due before" in out
    within(names, IDLE, NEVER_ON_THE_TICK, "idle tick")


# The subscriber's own page (cgi/manage.py): a link page that reads the
# address's line in every subscriber file (the subscriber format, its state
# and the pause), with the records of the POST: no dataclasses, no typing.
MANAGE_PAGE = LINK_PAGE | RECORDS | {
    "vykhukhol.web.manage", "vykhukhol.members", "vykhukhol.members.personal",
    "vykhukhol.services.subscribers", "vykhukhol.services.due_summary",
    "vykhukhol.services.subscriber_line",
    "vykhukhol.web.plain_templates.manage_page", "vykhukhol.web.plain_templates.manage_ask_page",
    "vykhukhol.web.plain_templates.manage_note_page",
}
SUBSCRIBER_FILE = {"vykhukhol.services.subscribers", "vykhukhol.services.subscriber_line"}


def test_the_own_page(pages_site) -> None:
    """GET cgi/manage.py with a signed link: no Jinja2, no e-mail package, no
    subscription machinery (membership), no lock: it only reads."""
    query = urlencode({"e": "known@example.org", "t": tokens.make_for_address(
        pages_site.settings().secret, "known@example.org", "manage")})
    names, out = imported("manage.py", pages_site.data.root, query=query)
    assert b"Status: 200" in out and b"known@example.org" in out
    within(names, MANAGE_PAGE, NEVER_ON_A_GET - SUBSCRIBER_FILE, "own page")


# A counted link of a letter (cgi/go.py): what every page reads and its
# signature, then its letter's stored links (files.clicklinks, the click files'
# one format, shared with newsletters.clicks); no page drawn, no cron watch.
# The click's line is appended after the answer, once the script's streams
# are closed: -X importtime, which writes to stderr, sees nothing of it.
GO_PAGE = READ | SIGNED | {"vykhukhol.web.go", "vykhukhol.files.clicklinks",
                           "gc"}  # built in: frozen before the click is written (web.cgi)


def test_every_allowed_module_of_ours_is_inside_the_boundary() -> None:
    for allowed in (IDLE, FORM, PAGE, LINK_PAGE, POST_SOON, POST_AFTER, MANAGE_PAGE, GO_PAGE):
        assert {n for n in allowed if n.startswith("vykhukhol")} <= BOUNDARY
    missing = [n for n in BOUNDARY if importlib.util.find_spec(n) is None]
    assert not missing, f"the boundary names modules that are not there: {missing}"


def test_only_the_boundary_trades_typing_for_start_up_time() -> None:
    """Outside the boundary a module imports typing for real: a hand-made
    ``TYPE_CHECKING = False`` there, or vykhukhol.records' NamedTuple in
    place of typing's, is a work-around nothing needs."""
    lib = CHECKOUT / "lib"
    faked = []
    for path in sorted((lib / "vykhukhol").rglob("*.py")):
        name = ".".join(path.relative_to(lib).with_suffix("").parts).removesuffix(".__init__")
        text = path.read_text(encoding="utf-8")
        if name not in BOUNDARY and ("TYPE_CHECKING = False" in text
                                     or "from vykhukhol.records import" in text):
            faked.append(name)
    assert not faked, f"outside the boundary, yet typing is faked: {faked}"


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
    within(names, GO_PAGE, NEVER_ON_A_GET | {"vykhukhol.newsletters"}, "counted link")
    names, out = imported("go.py", pages_site.data.root, query=query)
    within(names, GO_PAGE, NEVER_ON_A_GET | {"vykhukhol.newsletters"}, "counted link")
    assert [link.clicks for link in clicks.counts(pages_site.data, "20261201-090000-abcdef")] == [2]


# The script run as itself, saying on stderr whether the cyclic collector was
# on while its app answered.
COLLECTOR = """
import gc, sys
import vykhukhol.web.cgi as gateway
served = gateway.serve
def serve(app):
    print("COLLECTOR", gc.isenabled(), file=sys.stderr, flush=True)
    served(app)
gateway.serve = serve
script = sys.argv[1]
with open(script, encoding="utf-8") as source:
    code = compile(source.read(), script, "exec")
exec(code, {"__name__": "__main__", "__file__": script})
"""


@pytest.mark.parametrize("script, method", [("subscribe.py", "POST"), ("confirm.py", "GET"),
                                            ("../admin/index.py", "GET")])
def test_a_public_page_runs_without_the_cyclic_collector(pages_site, script: str,
                                                         method: str) -> None:
    """A visitor's page is a short process: the collector's walks only cost it
    time (web.cgi's SHORT_LIVED); the admin, whose requests may be large,
    keeps it."""
    path = (CHECKOUT / "cgi" / script).resolve()
    body = urlencode({"service": "news", "email": "gc@example.org"}).encode()
    environ = {
        "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_NAME": "localhost", "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1", "REQUEST_METHOD": method, "SCRIPT_NAME": f"/cgi/{script}",
        "SCRIPT_FILENAME": str(path), "REMOTE_ADDR": "127.0.0.1", "PATH": os.environ["PATH"],
        "PYTHONPATH": str(CHECKOUT / "lib"), "PYTHONNOUSERSITE": "1",
        "VYKHUKHOL_DATA": str(pages_site.data.root),
        "QUERY_STRING": link(pages_site, "confirm") if script == "confirm.py" else "",
        "CONTENT_TYPE": "application/x-www-form-urlencoded", "CONTENT_LENGTH": str(len(body))}
    done = subprocess.run([sys.executable, "-c", COLLECTOR, str(path)], env=environ, input=body,
                          capture_output=True, cwd=path.parent, timeout=60)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    said = [line for line in done.stderr.decode().splitlines() if line.startswith("COLLECTOR")]
    assert said == [f"COLLECTOR {script.startswith('..')}"], done.stderr.decode()[-2000:]


# The script run as itself, with an exit handler that leaves a mark: the
# interpreter's teardown runs the handlers, os._exit does not.
TEARDOWN = """
import atexit, os, sys
atexit.register(lambda: open(os.environ["TEARDOWN_MARK"], "w").close())
script = sys.argv[1]
with open(script, encoding="utf-8") as source:
    code = compile(source.read(), script, "exec")
exec(code, {"__name__": "__main__", "__file__": script})
"""


@pytest.mark.parametrize("script, method", [("subscribe.py", "POST"), ("subscribe.py", "GET"),
                                            ("confirm.py", "GET"), ("../admin/index.py", "GET")])
def test_a_public_page_ends_without_the_interpreters_teardown(pages_site, tmp_path, script: str,
                                                              method: str) -> None:
    """A visitor's page ends with os._exit once its answer and the work after
    it are done: the teardown would walk every module loaded (and after a
    subscribe post's fork, copy the pages it shares with the child). The
    answer and the work after it are whole all the same; the admin ends as
    any program does."""
    path = (CHECKOUT / "cgi" / script).resolve()
    address = f"teardown-{method.lower()}@example.org"
    body = urlencode({"service": "news", "email": address}).encode() if method == "POST" else b""
    mark = tmp_path / "tore-down"
    query = {"confirm.py": link(pages_site, "confirm"), "subscribe.py": "service=news"}.get(script, "")
    environ = {
        "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_NAME": "localhost", "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1", "REQUEST_METHOD": method, "SCRIPT_NAME": f"/cgi/{script}",
        "SCRIPT_FILENAME": str(path), "REMOTE_ADDR": "127.0.0.1", "PATH": os.environ["PATH"],
        "PYTHONPATH": str(CHECKOUT / "lib"), "PYTHONNOUSERSITE": "1",
        "VYKHUKHOL_DATA": str(pages_site.data.root), "TEARDOWN_MARK": str(mark),
        "QUERY_STRING": "" if method == "POST" else query,
        "CONTENT_TYPE": "application/x-www-form-urlencoded", "CONTENT_LENGTH": str(len(body))}
    done = subprocess.run([sys.executable, "-c", TEARDOWN, str(path)], env=environ, input=body,
                          capture_output=True, cwd=path.parent, timeout=60)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert done.stdout.startswith(b"Status: 200 OK\r\n") or b"\r\nStatus: 200" in done.stdout \
        or (script.startswith("..") and done.stdout), done.stdout[:300]
    assert mark.exists() == script.startswith(".."), done.stderr.decode()[-2000:]
    if method == "POST":  # the work after the answer was done before the end
        assert address in pages_site.subscribers("news")
        assert any(address.encode() in letter.read_bytes()
                   for letter in pages_site.data.outbox.glob("*.eml"))


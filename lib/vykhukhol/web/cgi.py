"""Run one of the apps as a CGI script (what the files in cgi/ and admin/ call).

The data directory is found as docs/reference/data-files.md#data-files-where
says, with ``vykhukhol.path`` looked for
beside the calling script. Work a page hands to ``Request.after`` (a
confirmation letter) runs once the whole answer is written and flushed to the
web server and the script's streams are closed, in a child of its own session
(:func:`_after_answer`), so neither the visitor's page nor the next request
on the connection waits for the mail server.

The answer is written by :func:`serve`, a CGI gateway of a few lines that does
what ``wsgiref.handlers.CGIHandler`` did for us (the same environ, the same
``Status:`` header) without importing wsgiref: every CGI request is a new
process, and a page pays for each import (docs/design/startup.md#startup).
"""

from __future__ import annotations

import os
import sys

# The pages a visitor opens: a small request each, in a process that ends with
# it. Their garbage is freed when it exits, so the cyclic collector, which
# walks the young objects some twenty times while the modules load (about
# 4 ms of a subscribe post's CPU, its child's included), only costs them time
# (docs/design/startup.md#startup-rules). The admin, the archive and the cron
# keep it: their requests may be large.
SHORT_LIVED = frozenset({"subscribe", "confirm", "unsubscribe", "manage", "go"})


def run(app_name: str, script: str) -> None:
    if app_name not in SHORT_LIVED:
        _run(app_name, script)
        return
    import gc

    gc.disable()
    _run(app_name, script)
    # Answered, and the work after the answer done: the process ends without
    # the interpreter's teardown, which would walk every module it loaded (and,
    # after a subscribe post's fork, write to a thousand pages shared with the
    # child: a fault each). Nothing of a visitor's page waits for it: the
    # streams are flushed here, and every file was closed where it was written
    # (docs/design/startup.md#startup-rules).
    _flush()
    os._exit(0)


def _run(app_name: str, script: str) -> None:
    if app_name == "cron":
        if _idle_answered(script):  # an idle tick answers before the rest is imported
            return
    if app_name == "subscribe" and os.environ.get("REQUEST_METHOD", "GET").upper() in ("GET", "HEAD"):
        from vykhukhol.web import fast

        root = fast.answer(script)  # the plain form, before the rest is imported
        if root is not None:
            _watch_after(root)
            return
    from vykhukhol.datadir import DataDir, locate
    from vykhukhol.web.http import AFTER

    data = DataDir(locate(None, os.path.dirname(os.path.realpath(script))))
    app = make_app(app_name, data)
    later: list = []

    def with_after(environ: dict, start_response):
        environ[AFTER] = later.extend
        return app(environ, start_response)

    serve(with_after)
    if later:
        _after_answer(later)


def _idle_answered(script: str) -> bool:
    """The CGI cron script's fast path: True when the idle tick answered."""
    if os.environ.get("REQUEST_METHOD", "GET").upper() not in ("GET", "HEAD", "POST"):
        return False
    from vykhukhol.sender import idle

    root = idle.data_root(os.path.dirname(os.path.realpath(script)))
    answer = idle.tick(root, _client)
    if answer is None:
        return False
    _plain_answer(answer)
    return True


def _client(trusted_proxies: str) -> str:
    """The CGI caller's address for cron_allow, as :mod:`.clients` trusts it
    (imported only for a site behind proxies: the tick pays for no more)."""
    if not trusted_proxies.strip():
        return os.environ.get("REMOTE_ADDR", "")
    from vykhukhol.web.clients import client_address

    return client_address(dict(os.environ), trusted_proxies)


def _plain_answer(text: str) -> None:
    from vykhukhol.web.headers import SECURITY_HEADERS  # what every answer of ours carries

    body = text.encode()
    fields = [("Status", "200 OK"), ("Content-Type", "text/plain; charset=utf-8"),
              ("Content-Length", str(len(body))), *SECURITY_HEADERS]
    head = "".join(f"{name}: {value}\r\n" for name, value in fields).encode() + b"\r\n"
    out = sys.stdout.buffer
    out.write(head if os.environ.get("REQUEST_METHOD", "GET").upper() == "HEAD" else head + body)
    out.flush()


def _after_answer(later: list) -> None:
    """The work after the answer, once the web server has all of it.

    Apache's mod_cgi ends a request (sends a short answer at all, and takes
    the next one of a kept-alive connection) only at the end of file of the
    script's output and error streams, and then ends the script (SIGTERM,
    SIGKILL 3 s later, waiting meanwhile). While they stayed open, a post
    whose letter was being sent answered late, and so did the next request:
    that told a new address from a known one. So the streams are closed
    first and the work is done by a child in a session of its own, which
    the end of the request does not end; this process waits for it (so a
    plain CGI caller still sees the letter sent when the process exits)
    unless the web server ends it first. No fork (a host's process limit):
    the work is done here, as before. A letter cut short anyway stays noted
    for the next run (members.unsent)."""
    _flush()
    # What the process holds now is left out of the child's garbage
    # collections, which would otherwise touch (and so copy) every page of it.
    import gc

    gc.freeze()
    # Forked before the streams close: at their end of file the web server may
    # end this process at once, and the child must exist (in its own session)
    # by then.
    try:
        child = os.fork()
    except OSError:
        child = -1
    if child == 0:
        try:
            os.setsid()
            _end_answer()
            for action in later:
                action()  # each is wrapped by http._logged: it never raises
        finally:
            os._exit(0)
    _end_answer()
    if child < 0:
        for action in later:
            action()
        return
    try:
        os.waitpid(child, 0)
    except ChildProcessError:
        pass


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def _end_answer() -> None:
    """Our ends of the web server's pipes closed: standard input, output and
    error become /dev/null. What the work after says on its error stream
    goes nowhere from here."""
    quiet = os.open(os.devnull, os.O_RDWR)
    try:
        for fd in (0, 1, 2):
            os.dup2(quiet, fd)
    finally:
        os.close(quiet)


APPS = {  # app name → (module, factory); only the one asked for is imported
    "subscribe": ("subscription", "subscribe"), "confirm": ("subscription", "confirm"),
    "unsubscribe": ("subscription", "unsubscribe"), "manage": ("manage", "app"), "cron": ("cron", "app"),
    "admin": ("admin", "app"), "view": ("archive", "view"), "archive": ("archive", "static"),
    "go": ("go", "app"),
    "hook": ("hooks", "app"),
    "api": ("api", "app"),
}


def make_app(app_name: str, data, cgi_dir=None):
    """The WSGI app ``app_name``; importing only its module keeps a CGI process
    small, and a fault in one page's module from taking down the others.
    (``__import__`` rather than importlib's import_module: importlib is one
    more module to load, and ``python -X importtime``, which the import budget
    reads, does not see a module that import_module loads.)"""
    if app_name not in APPS:
        sys.exit(f"unknown app {app_name!r}")
    module, factory = APPS[app_name]
    from vykhukhol.web.http import secure_transport

    name = module if "." in module else f"vykhukhol.web.{module}"
    __import__(name)
    make = getattr(sys.modules[name], factory)
    app = secure_transport(make(data, cgi_dir) if app_name == "admin" else make(data), data.settings)
    return watch_cron(app, data) if app_name in WATCHES_CRON else app


# The pages a person opens: each asks whether the cron has stopped (watch/cronwatch.py).
WATCHES_CRON = {"subscribe", "confirm", "unsubscribe", "manage", "view", "admin"}


def watch_cron(app, data):
    """``app``, which after its answer sends "cron is silent" when no run has
    started for too long (a stat and a small file per request; the letter at
    most once every 6 hours, after the answer where the server allows)."""

    def watched(environ: dict, start_response):
        answer = app(environ, start_response)
        from vykhukhol.watch import cronwatch

        if cronwatch.due_alert(str(data.root)):
            from vykhukhol.web.http import AFTER

            later = environ.get(AFTER)
            (later or _now)([lambda: _tell_silence(data)])
        return answer

    return watched


def _watch_after(root: str) -> None:
    """:func:`watch_cron` for a page answered by the fast path (web/fast.py)."""
    from vykhukhol.watch import cronwatch

    if cronwatch.due_alert(root):
        from vykhukhol.datadir import DataDir

        _after_answer([lambda: _tell_silence(DataDir(root))])


def _now(actions: list) -> None:
    for action in actions:
        action()


def _tell_silence(data) -> None:
    from vykhukhol import settings as settings_mod
    from vykhukhol.errors import VykhukholError
    from vykhukhol.watch import cronwatch

    try:
        cronwatch.alert(data, settings_mod.load(data.settings))
    except VykhukholError as exc:  # a page's answer is out: the error log says it
        print(f"vykhukhol: the alert 'cron is silent' could not be sent: {exc.message}",
              file=sys.stderr)


# The request's own variables, which the server hands over as bytes and
# Python decodes with the file system's encoding: PEP 3333 wants them as
# latin-1 text of the same bytes (what wsgiref.handlers.read_environ does).
_REQUEST_KEYS = frozenset(("SCRIPT_NAME", "PATH_INFO", "QUERY_STRING", "REQUEST_METHOD",
                           "AUTH_TYPE", "CONTENT_TYPE", "CONTENT_LENGTH", "HTTPS",
                           "REMOTE_USER", "REMOTE_IDENT"))


def _is_request_key(key: str) -> bool:
    if key.startswith("REDIRECT_"):
        return _is_request_key(key[len("REDIRECT_"):])
    return key in _REQUEST_KEYS or key.startswith(("HTTP_", "SSL_"))


def cgi_environ(stdin=None) -> dict:
    """The WSGI environ of this CGI request (PEP 3333, as wsgiref's CGIHandler
    made it); the body is read from ``stdin`` (default: standard input)."""
    encoding = sys.getfilesystemencoding()
    environ: dict[str, object] = {key: value.encode(encoding, "surrogateescape").decode("iso-8859-1")
               if _is_request_key(key) else value for key, value in os.environ.items()}
    environ.update({
        "wsgi.input": sys.stdin.buffer if stdin is None else stdin, "wsgi.errors": sys.stderr, "wsgi.version": (1, 0),
        "wsgi.run_once": True, "wsgi.multithread": False, "wsgi.multiprocess": True,
        "wsgi.url_scheme": "https" if str(environ.get("HTTPS", "off")).lower() in ("on", "1", "yes")
        else "http",
    })
    return environ


def serve(app, stdin=None, stdout=None) -> None:
    """Run the WSGI ``app`` once for this CGI request and write its answer
    (``Status:`` and the headers, a blank line, the body) to ``stdout``
    (default: standard output), flushed."""
    environ = cgi_environ(stdin)
    head: list[str] = []
    written: list[bytes] = []  # what an app gives the write() of start_response (PEP 3333)

    def start_response(status: str, headers: list[tuple[str, str]], exc_info=None):
        for name, value in headers:
            if any(c in name or c in value for c in "\r\n\0"):  # header injection: refuse
                raise ValueError(f"a control character in the header {name!r}")
        head[:] = [f"Status: {status}\r\n", *(f"{name}: {value}\r\n" for name, value in headers),
                   "\r\n"]
        return written.append

    out = sys.stdout.buffer if stdout is None else stdout
    try:
        result = app(environ, start_response)
        try:
            chunks = list(result)  # an app may call write() while it yields
            body = b"".join(written) + b"".join(chunks)
        finally:
            getattr(result, "close", lambda: None)()
        if not head:
            raise RuntimeError("the app did not start its response")
        answer = "".join(head).encode("latin-1") + body
    except Exception:  # noqa: BLE001 - the server gets a plain 500, the log the traceback
        import traceback

        traceback.print_exc(file=sys.stderr)
        answer = (b"Status: 500 Internal Server Error\r\nContent-Type: text/plain\r\n"
                  b"Content-Length: 21\r\n\r\nInternal Server Error")
    out.write(answer)
    out.flush()

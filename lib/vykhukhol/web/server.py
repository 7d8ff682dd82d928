"""``vykhukhol serve``: the same apps under waitress, plus a ticker.

Serves ``/cgi/subscribe.py``, ``/cgi/confirm.py``, ``/cgi/unsubscribe.py``, ``/cgi/manage.py``,
``/cgi/view.py``, ``/cgi/go.py``, ``/cgi/hook.py/{provider}`` (the mail providers' callbacks),
the public archive's files under ``/archive/``, the renamed cron script ``/cgi/cron-<random>.py`` (only under the name it
has in the CGI folder), and ``/admin/``. The ticker starts a sender run every
minute in this process (``--no-ticker``: none). SIGTERM and SIGINT stop both
cleanly: the ticker finishes the run it is in, then the server closes.

waitress refuses a body larger than the app would take (``MAX_UPLOAD_BYTES``)
with 413 before reading it, and drops a connection that sends nothing for
``CHANNEL_TIMEOUT`` seconds between requests; ``web/guard.py`` gives each
request a deadline and the server a connection limit, so slow clients cannot
keep others out. Work a page hands to ``Request.after`` (a
confirmation letter) runs in one background thread, after the answer.
"""

from __future__ import annotations

import contextlib
import queue
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from vykhukhol import sender
from vykhukhol import settings as settings_mod
from vykhukhol.datadir import CHECKOUT, DataDir
from vykhukhol.errors import VykhukholError
from vykhukhol.services import demo
from vykhukhol.web import serve_claim
from vykhukhol.web.cgi import make_app
from vykhukhol.web.fresh_site import first_start, locale_language
from vykhukhol.web.guard import guarded_server
from vykhukhol.web.http import AFTER, MAX_UPLOAD_BYTES, Response, redirect, respond

TICK = 60.0  # seconds between two runs started by the ticker
CHANNEL_TIMEOUT = 30  # seconds a connection may stay silent mid-request
THREADS = 4
CRON_NAME = re.compile(r"cron-[A-Za-z0-9_-]{4,64}\.py")


def dispatcher(data: DataDir, cgi_dir: Path,
               after: Callable[[list[Callable[[], None]]], None] | None = None) -> Callable:
    """The one WSGI app of ``serve``; ``after`` runs work handed to ``Request.after``."""
    apps = {name: make_app(name, data, cgi_dir) for name in ("subscribe", "confirm", "unsubscribe",
                                                     "manage", "view", "cron", "admin", "hook",
                                                     "archive", "go", "api")}

    def app(environ: dict, start_response: Callable) -> Iterable[bytes]:
        # Mounted below a prefix (Passenger's SCRIPT_NAME "/lists"), links stay below it.
        mount = (environ.get("SCRIPT_NAME", "") or "").rstrip("/")
        if after is not None:
            environ[AFTER] = after
        path = environ.get("PATH_INFO", "") or "/"
        if path == "/":
            return respond(redirect(f"{mount}/admin/"), start_response)
        if path == "/admin" or path.startswith("/admin/"):
            environ["SCRIPT_NAME"] = f"{mount}/admin"
            environ["PATH_INFO"] = path[len("/admin"):] or "/"
            return apps["admin"](environ, start_response)
        if path.startswith("/cgi/"):
            name = path[len("/cgi/"):]
            if name in ("subscribe.py", "confirm.py", "unsubscribe.py", "manage.py", "view.py",
                        "go.py"):
                environ["SCRIPT_NAME"], environ["PATH_INFO"] = mount + path, ""
                return apps[name[:-3]](environ, start_response)
            if name.startswith("api.py/"):
                environ["SCRIPT_NAME"] = f"{mount}/cgi/api.py"
                environ["PATH_INFO"] = name[len("api.py"):]
                return apps["api"](environ, start_response)
            if name.startswith("hook.py/"):  # the provider's name follows, as under CGI
                environ["SCRIPT_NAME"] = f"{mount}/cgi/hook.py"
                environ["PATH_INFO"] = name[len("hook.py"):]
                return apps["hook"](environ, start_response)
            if CRON_NAME.fullmatch(name) and (cgi_dir / name).is_file():
                return apps["cron"](environ, start_response)
        if path == "/api" or path.startswith("/api/"):  # the API, also at /cgi/api.py/ as under CGI
            environ["SCRIPT_NAME"], environ["PATH_INFO"] = f"{mount}/api", path[len("/api"):]
            return apps["api"](environ, start_response)
        if path.startswith("/archive/"):  # the public archive's files (what Apache serves itself)
            environ["SCRIPT_NAME"], environ["PATH_INFO"] = f"{mount}/archive", path[len("/archive"):]
            return apps["archive"](environ, start_response)
        return respond(Response("<!doctype html><title>404</title><p>Not found.</p>", 404),
                       start_response, environ.get("REQUEST_METHOD") == "HEAD")

    return app


class Afterwards(threading.Thread):
    """Runs, one at a time, the work pages handed over to be done after their answer."""

    def __init__(self) -> None:
        super().__init__(name="vykhukhol-after", daemon=True)
        self.work: queue.Queue[Callable[[], None] | None] = queue.Queue()

    def submit(self, actions: list[Callable[[], None]]) -> None:
        for action in actions:
            self.work.put(action)

    def run(self) -> None:
        while (action := self.work.get()) is not None:
            action()  # each is wrapped by http._logged: it never raises

    def finish(self, timeout: float) -> None:
        """Do what was handed over, then stop."""
        self.work.put(None)
        self.join(timeout)


class Ticker(threading.Thread):
    """Starts a sender run every ``TICK`` seconds until stopped."""

    def __init__(self, data: DataDir, interval: float = TICK) -> None:
        super().__init__(name="vykhukhol-ticker", daemon=True)
        self.data = data
        self.interval = interval
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(self.interval):
            try:
                sender.run(self.data, settings_mod.load(self.data.settings))
            except VykhukholError as exc:
                print(f"vykhukhol ticker: {exc.message}", file=sys.stderr)
            except Exception as exc:  # noqa: BLE001 - the ticker must outlive a bad run
                print(f"vykhukhol ticker: run failed: {exc!r}", file=sys.stderr)


def first_lines(data: DataDir) -> list[str]:
    """What a newcomer must know at once: the mode, what it
    means for letters, how to switch, and where mail goes."""
    settings = settings_mod.load(data.settings)
    if settings["mode"] == "working":
        lines = ["mode: working (the sender sends the letters that are due)"]
    else:
        lines = ["mode: debug: no letter goes to subscribers, not even confirmation requests "
                 "(they wait, and go with the first working run)",
                 "  switch to working on the admin's Status page, or with `vykhukhol mode working`"]
    if settings["mail.transport"] == "outbox":
        lines.append(f"mail: written to {data.outbox} (the admin's Outbox page), never sent")
    return lines


def local_url(host: str, port: int) -> str:
    """The URL a browser on this machine uses for ``host``:``port``."""
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    return f"http://{host if ':' not in host else f'[{host}]'}:{port}"


def _unmake(data: DataDir, made: list[Path]) -> None:
    """Take away the folders (and the claim's lock file) a refused start made."""
    if data.state in made:
        for name in ("serve.lock", "serve"):
            with contextlib.suppress(OSError):
                (data.state / name).unlink()
    for folder in reversed(made):
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when empty: nothing of anyone's is removed


def serve(data: DataDir, host: str = "127.0.0.1", port: int = 8080, ticker: bool = True,
          cgi_dir: Path | None = None) -> None:
    cgi_dir = cgi_dir or CHECKOUT / "cgi"
    made = [p for p in (data.root, data.state) if not p.exists()]  # what the claim makes
    hold = serve_claim.claim(data)  # a second serve on this data refuses here, before anything
    afterwards = Afterwards()
    try:
        server = guarded_server(
            dispatcher(data, cgi_dir, afterwards.submit), host=host, port=port, threads=THREADS,
            ident="vykhukhol", max_request_body_size=MAX_UPLOAD_BYTES,
            channel_timeout=CHANNEL_TIMEOUT,
            # X-Forwarded-For reaches the app, which believes it only from
            # trusted_proxies (web/clients.py); waitress would drop it.
            clear_untrusted_proxy_headers=False)
    except OSError as exc:
        hold.release()
        _unmake(data, made)  # a busy port makes nothing, not even the claim's lock
        raise VykhukholError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; nothing was "
                             f"changed (choose another port with --port)") from None
    # Only once the port is ours is anything made or changed: a busy
    # port used to leave a set-up whose password was never printed.
    url = local_url(host, server.effective_port)
    try:
        hold.note(url)
        password = first_start(data, url, locale_language())
        previous = None if password else demo.current_url(data)
        moved = None if password else demo.follow_port(data, url)
        hold.followed(previous or "", moved)
    except BaseException:
        server.close()
        hold.release()
        raise
    tick = Ticker(data) if ticker else None
    stop = threading.Event()

    def shut_down(signum, frame) -> None:
        stop.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, shut_down)
    signal.signal(signal.SIGINT, shut_down)
    print(f"Vykhukhol serving {data.root}", flush=True)
    print(f"admin: {url}/admin/", flush=True)
    if moved:
        print(f"site_url is now {moved} (a local data directory follows the port it is served on; "
              f"{previous} again when this serve stops)", flush=True)
    if password:
        print(f"a fresh data directory: admin password {password} (change it with `vykhukhol password`)",
              flush=True)
        print(f"subscribe to the demo list: {url}/cgi/subscribe.py?service={demo.NAME}", flush=True)
    print(f"ticker: {'a sender run every minute' if tick else 'off'}", flush=True)
    for line in first_lines(data):
        print(line, flush=True)
    if tick:
        tick.start()
    afterwards.start()
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        if tick:
            tick.stopping.set()
            tick.join(timeout=60)
        server.close()
        afterwards.finish(timeout=60)
        hold.release()
        print("Vykhukhol stopped", flush=True)

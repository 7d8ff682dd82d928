"""The WSGI entry (vykhukhol.web.wsgi:application, passenger_wsgi.py) outside Passenger.

Under waitress's own command line, ``waitress-serve vykhukhol.web.wsgi:application``
— the way docs/deploying/passenger.md#deploy-passenger names the
callable for any WSGI server — with the data directory named by
``VYKHUKHOL_DATA``, the whole site works: subscribe, confirm, the renamed
cron script, the admin. And ``passenger_wsgi.py``, imported the way
Passenger's loader imports it, never fails to import: a broken settings.ini
or a missing package shows a clean error page at request time, with the
traceback only in the server's error stream.

Each test works on a copy of the checkout's lib/ (and passenger_wsgi.py) in
a temporary folder, because the app finds the cron script and
``vykhukhol.path`` in the checkout's cgi/, which a test must not write to.
"""

from __future__ import annotations

import http.client
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from support.apachekit import fetch, only_form
from support.servetools import call, environ, subprocess_env
from support.webtools import free_port, link_in, parse_message, plain_text

CHECKOUT = Path(__file__).resolve().parents[2]
PASSWORD = "correct-horse-1"
START_WITHIN = 20.0  # seconds waitress may take to answer its first request


def copy_checkout(target: Path) -> Path:
    """lib/vykhukhol, passenger_wsgi.py and a cgi/ with the shipped cron.py, in ``target``."""
    shutil.copytree(CHECKOUT / "lib" / "vykhukhol", target / "lib" / "vykhukhol",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(CHECKOUT / "passenger_wsgi.py", target / "passenger_wsgi.py")
    (target / "cgi").mkdir()
    shutil.copyfile(CHECKOUT / "cgi" / "cron.py", target / "cgi" / "cron.py")
    return target


def cli(lib: Path, data: Path, *args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(data), *args],
                            capture_output=True, text=True, timeout=60, env=subprocess_env(lib))
    assert result.returncode == 0, f"vykhukhol {' '.join(args)}: {result.stderr}"
    return result.stdout


def waitress_serve() -> list[str]:
    """The waitress-serve of this Python (it is ``python -m waitress``)."""
    script = Path(sys.executable).parent / "waitress-serve"
    return [str(script)] if script.exists() else [sys.executable, "-m", "waitress"]


def _get(port: int, path: str, cookie: str = "") -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers={"Cookie": cookie} if cookie else {})
    response = conn.getresponse()
    answer = response.status, {k.lower(): v for k, v in response.getheaders()}, \
        response.read().decode("utf-8", "replace")
    conn.close()
    return answer


def test_the_whole_site_works_under_waitress_serve_with_vykhukhol_data(tmp_path: Path) -> None:
    """`waitress-serve vykhukhol.web.wsgi:application` serves subscribe, confirm, the cron URL and the admin."""
    checkout = copy_checkout(tmp_path / "checkout")
    data = tmp_path / "elsewhere" / "data"  # not the checkout's data/: only VYKHUKHOL_DATA names it
    lib = checkout / "lib"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    init = cli(lib, data, "init", "--cgi-dir", str(checkout / "cgi"), "--site-url", base,
               "--admin-email", "admin@example.org", "--password", PASSWORD)
    cron_url = re.search(r"^cron URL: (\S+)$", init, re.M).group(1)
    for command in (("mode", "working"), ("db", "add", "main"),
                    ("service", "add", "news", "--db", "main", "--title", "News"),
                    ("letter", "add", "news", "--subject", "Lesson one", "--delay", "0s",
                     "--body", "Hello {{ name }}, lesson one."),
                    ("service", "enable", "news")):
        cli(lib, data, *command)

    err = tmp_path / "waitress.err"
    with err.open("wb") as stderr:
        server = subprocess.Popen(
            [*waitress_serve(), f"--listen=127.0.0.1:{port}", "vykhukhol.web.wsgi:application"],
            env=subprocess_env(lib, VYKHUKHOL_DATA=str(data)), cwd=tmp_path,
            stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + START_WITHIN
        while True:
            assert server.poll() is None, err.read_text(errors="replace")
            try:
                form_page = fetch(f"{base}/cgi/subscribe.py?service=news")
                break
            except OSError:
                assert time.monotonic() < deadline, err.read_text(errors="replace")
                time.sleep(0.05)

        assert form_page.status == 200, form_page
        action, fields = only_form(form_page)
        fields.update(email="reader@example.com", name="Reader")
        time.sleep(2.1)  # a person's pace: a form posted faster than 2 s is a bot's
        assert fetch(f"{base}/cgi/{action}", fields).status == 200
        asked = sorted((data / "outbox").glob("*.eml"))
        assert len(asked) == 1, err.read_text(errors="replace")
        link = link_in(plain_text(parse_message(asked[0].read_bytes())), "confirm.py")
        assert link.startswith(f"{base}/cgi/confirm.py?"), link
        action, fields = only_form(fetch(link))
        assert fetch(f"{base}/cgi/{action}", fields).status == 200
        assert "\tactive\t" in next(data.glob("services/main/news/subscribers.txt")).read_text()

        assert fetch(f"{base}/cgi/cron.py").status == 404  # renamed by init
        run = fetch(cron_url)
        assert run.status == 200 and run.body.startswith("run "), run
        assert len(list((data / "outbox").glob("*.eml"))) == 2, run.body

        status, headers, _ = _get(port, "/admin/")
        assert status == 303 and urlsplit(headers["location"]).path == "/admin/login", headers
        login = fetch(f"{base}/admin/login")
        assert login.status == 200 and login.headers["content-type"].startswith("text/html"), login
        action, fields = only_form(login)
        fields["password"] = PASSWORD
        entered = fetch(base + action, fields)
        assert entered.status == 303, entered
        cookie = entered.headers["set-cookie"].split(";", 1)[0]
        status, _, body = _get(port, "/admin/", cookie)
        assert status == 200 and urlsplit(cron_url).path in body, body[:800]

        for path in ("/data/settings.ini", "/lib/vykhukhol/settings.py", "/passenger_wsgi.py"):
            assert fetch(base + path).status == 404, path
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert "Traceback" not in err.read_text(errors="replace")


def test_mounted_below_a_prefix_every_redirect_form_and_cookie_stays_below_it(
        site, monkeypatch: pytest.MonkeyPatch) -> None:
    """With SCRIPT_NAME /lists (Passenger's PassengerBaseURI), nothing points back to the host's root."""
    from vykhukhol.web.wsgi import make_application

    monkeypatch.setenv("VYKHUKHOL_DATA", str(site.root))  # read at the first request
    site.service("news")
    app = make_application(site.cgi_dir)

    def get(path: str, query: str = "") -> tuple[int, dict[str, str], str, str]:
        return call(app, environ("GET", path, query, b"", "", "missing", script="/lists"))

    status, headers, _, _ = get("/")
    assert (status, headers["Location"]) == (303, "/lists/admin/")
    status, headers, _, _ = get("/admin/")
    assert status == 303 and headers["Location"].startswith("/lists/admin/login"), headers
    status, _, page, _ = get("/admin/login")
    assert status == 200 and 'action="/lists/admin/login"' in page, page
    body = f"password={PASSWORD}".encode()
    status, headers, page, _ = call(app, environ(
        "POST", "/admin/login", "", body, "application/x-www-form-urlencoded", str(len(body)),
        script="/lists"))
    assert status == 303 and headers["Location"].startswith("/lists/admin/"), (headers, page)
    assert "Path=/lists/admin" in headers["Set-Cookie"], headers

    status, _, page, _ = get("/cgi/subscribe.py", "service=news")
    assert status == 200 and 'action="subscribe.py"' in page, page
    cron = next(site.cgi_dir.glob("cron-*.py")).name
    status, _, page, _ = get(f"/cgi/{cron}")
    assert status == 200 and page.startswith("run "), page
    for path in ("/cgi/cron.py", "/data/settings.ini", "/lib/vykhukhol/settings.py", "/lists/admin/"):
        assert get(path)[0] == 404, path


# What Passenger's wsgi-loader does with the startup file (it loads it as a
# module named passenger_wsgi and takes `application`), then requests.
REQUESTS = """\
import importlib.util, io, json, sys
from wsgiref.util import setup_testing_defaults
if sys.argv[2] == "no-jinja2":
    sys.modules["jinja2"] = None  # as on a host where the package was never installed
spec = importlib.util.spec_from_file_location("passenger_wsgi", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(json.dumps("imported"), flush=True)
for path, query in (("/cgi/subscribe.py", "service=news"), ("/admin/login", ""), ("/", "")):
    environ = {"PATH_INFO": path, "QUERY_STRING": query, "wsgi.errors": io.StringIO()}
    setup_testing_defaults(environ)
    seen = []
    body = b"".join(module.application(environ, lambda status, headers, exc=None: seen.append(status)))
    print(json.dumps([path, seen[0], body.decode("utf-8", "replace"),
                      environ["wsgi.errors"].getvalue()]), flush=True)
"""


def _load_and_ask(checkout: Path, mode: str) -> list:
    result = subprocess.run(
        [sys.executable, "-c", REQUESTS, str(checkout / "passenger_wsgi.py"), mode],
        capture_output=True, text=True, timeout=60, cwd=checkout,
        env=subprocess_env(Path("/nonexistent")))  # passenger_wsgi.py must find lib/ itself
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0] == "imported", result.stdout
    return lines[1:]


@pytest.mark.parametrize("broken", ["not an ini file\n[main\nlanguage = en\n",
                                    "[main]\nlanguage = klingon\nsite_url = nowhere\n",
                                    "\x00\xff\n"])
def test_a_broken_settings_file_never_stops_passenger_wsgi_from_loading(tmp_path: Path,
                                                                        broken: str) -> None:
    """Import succeeds whatever settings.ini holds; requests get pages, never a traceback."""
    checkout = copy_checkout(tmp_path / "checkout")
    data = tmp_path / "private" / "data"  # found through cgi/vykhukhol.path (docs/reference/data-files.md#data-files-where)
    cli(checkout / "lib", data, "init", "--cgi-dir", str(checkout / "cgi"),
        "--admin-email", "admin@example.org", "--password", PASSWORD)
    (checkout / "cgi" / "vykhukhol.path").write_text(f"{data}\n", encoding="utf-8")
    (data / "settings.ini").write_text(broken, encoding="utf-8", errors="surrogateescape")

    for path, status, body, _log in _load_and_ask(checkout, "plain"):
        assert status[:3] in ("200", "303", "404", "500", "503"), (path, status, body)
        assert "Traceback" not in body and 'File "' not in body, (path, body)
        if status.startswith("200"):
            assert body.lstrip().lower().startswith("<!doctype html>"), (path, body)


def test_a_missing_package_gives_a_clean_500_page_and_the_traceback_in_the_log(tmp_path: Path) -> None:
    """Without Jinja2 the app cannot be built: import still succeeds, each request answers a plain 500."""
    checkout = copy_checkout(tmp_path / "checkout")
    answers = _load_and_ask(checkout, "no-jinja2")
    assert len(answers) == 3
    for path, status, body, log in answers:
        assert status.startswith("500"), (path, status, body)
        assert "Traceback" not in body and "jinja2" not in body.lower(), (path, body)
        assert "Traceback" in log and "jinja2" in log, (path, log)

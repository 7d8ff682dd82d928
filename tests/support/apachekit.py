"""A real Apache with mod_cgi over a copied installation: the shared-hosting
steps of docs/deploying/apache.md#deploy-apache (upload, modes, ``.htaccess``,
the vendored libraries), the ``apache`` fixture that serves such a copy, and the HTTP helpers the
Apache, Passenger and WSGI tests share.
"""

from __future__ import annotations

import contextlib
import html.parser
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import pytest

from support import vendorkit
from support.vendorkit import vendor

APACHE = Path("/usr/sbin/apache2")


MODULES = Path("/usr/lib/apache2/modules")


WGET = shutil.which("wget") or "/usr/bin/wget"


CHECKOUT = Path(__file__).resolve().parents[2]


WEB_USER = "www-data"  # Debian's Apache user; switched to only when the test runs as root


PASSWORD = "correct-horse-1"


# What the deploy notes vendor with `pip install --target lib …`.
DEPENDENCIES = tuple(vendorkit.declared())  # the Apache page's step 1 installs exactly these


SCRIPTS = ("cgi/subscribe.py", "cgi/confirm.py", "cgi/unsubscribe.py", "cgi/manage.py", "cgi/view.py",
           "cgi/cron.py", "cgi/hook.py", "cgi/go.py", "cgi/api.py", "admin/index.py")


BATCH = """\
import ast, contextlib, io, sys
from vykhukhol import cli
for argv in ast.literal_eval(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(argv)
    if code:
        sys.exit(f"{' '.join(argv)} -> {code}: {err.getvalue()}")
"""


# The .htaccess files the Apache page tells the owner to write, verbatim. The
# release ships only data/.htaccess; shipping these too would make the upload
# the whole installation again.
HTACCESS_CGI = """\
Options +ExecCGI -Indexes
AddHandler cgi-script .py
<Files "vykhukhol.path">
    Require all denied
</Files>
"""


HTACCESS_ADMIN = """\
Options +ExecCGI -Indexes
AddHandler cgi-script .py
DirectoryIndex index.py
"""


HTACCESS_LIB = """\
Require all denied
<IfModule !mod_authz_core.c>
    Order deny,allow
    Deny from all
</IfModule>
"""


HTTPD_CONF = """\
# A shared host in miniature, for the Apache tests.
ServerRoot "{root}"
ServerName 127.0.0.1
Listen 127.0.0.1:{port}
PidFile "{root}/httpd.pid"
DefaultRuntimeDir "{root}/run"
ErrorLog "{root}/error.log"
LogLevel warn
{user}
LoadModule mpm_prefork_module {modules}/mod_mpm_prefork.so
LoadModule authz_core_module {modules}/mod_authz_core.so
LoadModule authz_host_module {modules}/mod_authz_host.so
LoadModule access_compat_module {modules}/mod_access_compat.so
LoadModule mime_module {modules}/mod_mime.so
LoadModule dir_module {modules}/mod_dir.so
LoadModule autoindex_module {modules}/mod_autoindex.so
LoadModule env_module {modules}/mod_env.so
LoadModule cgi_module {modules}/mod_cgi.so
# Slow clients are the server's to drop (docs/deploying/apache.md#apache-host): Debian's
# mods-available/reqtimeout.conf, enabled by default there.
LoadModule reqtimeout_module {modules}/mod_reqtimeout.so
RequestReadTimeout header=20-40,MinRate=500 body=20,MinRate=500
StartServers 2
MinSpareServers 1
MaxSpareServers 4
MaxRequestWorkers 8
Timeout 60
TypesConfig /etc/mime.types
DirectoryIndex index.html
AccessFileName .htaccess
# The scripts' `#!/usr/bin/env python3` looks python3 up on this PATH.
PassEnv PATH
DocumentRoot "{docroot}"
<Directory />
    Options None
    AllowOverride None
    Require all denied
</Directory>
<Directory "{docroot}">
    # Debian's stock Options for /var/www, and the override classes the
    # .htaccess files need: Require (AuthConfig), AddHandler (FileInfo),
    # DirectoryIndex (Indexes), Options.
    Options Indexes FollowSymLinks
    AllowOverride AuthConfig FileInfo Indexes Options
    Require all granted
</Directory>
<Files ".ht*">
    Require all denied
</Files>
"""


def _copy_bytes(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)  # no mode, no owner: as an FTP upload


def _shipped(folder: str) -> Iterator[Path]:
    for path in sorted((CHECKOUT / folder).rglob("*")):
        relative = path.relative_to(CHECKOUT)
        if not path.is_file() or "__pycache__" in relative.parts or path.suffix == ".pyc" \
                or any(part.endswith(".egg-info") for part in relative.parts):
            continue
        if folder == "cgi" and (path.name.startswith("cron-") or path.name == "vykhukhol.path"):
            continue  # left by a local `vykhukhol init`; never shipped
        if folder in ("data", "archive") and path.name not in (".htaccess", ".keep"):
            continue  # only the skeleton ships
        yield relative


def upload(install: Path) -> None:
    """Step 2: lib/, cgi/, admin/, archive/ (its .htaccess), the data/ skeleton
    and the top .htaccess."""
    for folder in ("lib", "cgi", "admin", "archive", "data"):
        for relative in _shipped(folder):
            _copy_bytes(CHECKOUT / relative, install / relative)
    _copy_bytes(CHECKOUT / ".htaccess", install / ".htaccess")


def example_commands() -> list[str]:
    """Step 6's example as the manual prints it (the block with ``letter add``),
    a command a line, less its comments and the mail provider's three lines
    (security, user, password), which the test's SMTP server does not need."""
    text = (CHECKOUT / "docs" / "deploying" / "apache.md").read_text(encoding="utf-8")
    section = text.split("(apache-step-6)=", 1)[1].split("(apache-step-7)=", 1)[0]
    block = next(b for b in re.findall(r"```sh\n(.*?)```", section, re.S) if "letter add" in b)
    return [line for line in block.splitlines()
            if line.strip() and not line.lstrip().startswith("#")
            and not re.search(r"mail\.smtp_(security|user|password)\b", line)]


def run_example(site: Site) -> None:
    """Step 6's example, run by bash as the owner would over SSH: in
    ``~/public_html/lists`` (a link to the served folder), ``python3`` the web
    server's."""
    home = site.root / "home"
    (home / "public_html").mkdir(parents=True)
    (home / "public_html" / "lists").symlink_to(site.install)
    script = "set -e\ncd ~/public_html/lists\n" + "\n".join(example_commands()) + "\n"
    env = {"PATH": f"{site.root / 'bin'}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home),
           "LANG": "C.UTF-8"}
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120,
                            env=env, cwd=home)
    hand_to_web_user(site.data)
    assert result.returncode == 0, f"the manual's example failed: {result.stderr}"


def set_modes(install: Path) -> None:
    """Step 4: folders 755, files 644, the entry scripts 755 (whatever the umask)."""
    for path in [install, *install.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    for script in SCRIPTS:
        (install / script).chmod(0o755)


def write_htaccess(install: Path) -> None:
    """Step 3: the .htaccess files for cgi/, admin/ and lib/ (data/ ships its own)."""
    for folder, text in (("cgi", HTACCESS_CGI), ("admin", HTACCESS_ADMIN), ("lib", HTACCESS_LIB)):
        target = install / folder / ".htaccess"
        if not target.exists():  # a release that ships one wins
            target.write_text(text, encoding="utf-8")
    assert "Require all denied" in (install / "data" / ".htaccess").read_text(encoding="utf-8")


def hand_to_web_user(folder: Path) -> None:
    """Step 7: the data directory belongs to the user the CGI scripts run as."""
    if os.geteuid() != 0 or not folder.exists():
        return  # not root: Apache runs everything as this very user
    import pwd

    entry = pwd.getpwnam(WEB_USER)
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)


def as_web_user() -> dict:
    return {"user": WEB_USER, "group": WEB_USER} if os.geteuid() == 0 else {}


def python_for_web_user() -> str:
    """The first Python 3.10+ that the web server's user can run."""
    tried = []
    for candidate in dict.fromkeys([sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"]):
        try:
            result = subprocess.run(
                [candidate, "-c", "import sys; sys.exit(sys.version_info < (3, 10))"],
                capture_output=True, timeout=30, cwd="/", **as_web_user())
        except OSError as exc:
            tried.append(f"{candidate}: {exc}")
            continue
        if result.returncode == 0:
            return candidate
        tried.append(f"{candidate}: exit {result.returncode} {result.stderr.decode()[-200:]}")
    pytest.fail(f"no Python 3.10+ that {WEB_USER} can run (install Debian's python3): " + "; ".join(tried))


@contextlib.contextmanager
def traversable(path: Path) -> Iterator[None]:
    """o+x (traverse, not list) on ``path`` and every folder above it, for the web user."""
    changed = []
    for folder in [path, *path.parents]:
        mode = stat.S_IMODE(folder.stat().st_mode)
        if not mode & stat.S_IXOTH:
            folder.chmod(mode | stat.S_IXOTH)
            changed.append((folder, mode))
    try:
        yield
    finally:
        for folder, mode in changed:
            folder.chmod(mode)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: str

    def __repr__(self) -> str:  # what a failed assertion shows
        return f"Answer({self.status}, {self.headers.get('content-type')!r}, {self.body[:800]!r})"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def fetch(url: str, form: dict[str, str] | str | None = None) -> Answer:
    """GET, or POST ``form`` urlencoded; every status comes back as an Answer."""
    data = None if form is None else (form if isinstance(form, str) else urlencode(form)).encode()
    request = urllib.request.Request(url, data=data)
    if data is not None:
        request.add_header("Content-Type", "application/x-www-form-urlencoded")
    try:
        with _OPENER.open(request, timeout=30) as response:
            status, headers, raw = response.status, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        status, headers, raw = exc.code, exc.headers, exc.read()
    return Answer(status, {k.lower(): v for k, v in headers.items()}, raw.decode("utf-8", "replace"))


class _Forms(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.forms: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append((values.get("action", ""), {}))
        elif tag == "input" and self.forms and values.get("name"):
            self.forms[-1][1][values["name"]] = values.get("value", "")


def only_form(page: Answer) -> tuple[str, dict[str, str]]:
    """(action, fields) of the one form on a page."""
    parser = _Forms()
    parser.feed(page.body)
    assert len(parser.forms) == 1, page
    return parser.forms[0]


def plain_text(message) -> str:
    part = message.get_body(("plain",))
    assert part is not None, message
    return part.get_content()


@dataclass
class Site:
    root: Path      # the ServerRoot: httpd.conf, logs, pid
    install: Path   # the uploaded folder, Apache's DocumentRoot
    data: Path      # the data directory
    pointer: bool   # found through cgi/vykhukhol.path rather than --data
    port: int
    cron_url: str = ""

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def error_log(self) -> str:
        path = self.root / "error.log"
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    def cli(self, *args: str) -> str:
        """`python3 -m vykhukhol …` on the installed copy, run as the owner (this
        process) would over SSH; the data directory goes back to the web user."""
        return self._python("-m", "vykhukhol", *self._where(), *args)

    def cli_batch(self, *commands: tuple[str, ...]) -> None:
        """Several commands through the CLI's main() in one process (each
        interpreter start is a second on a loaded machine); stops at the first error."""
        self._python("-c", BATCH, repr([[*self._where(), *command] for command in commands]))

    def _where(self) -> list[str]:
        return [] if self.pointer else ["--data", str(self.data)]

    def _python(self, *args: str) -> str:
        env = {**os.environ, "PYTHONPATH": str(self.install / "lib")}
        env.pop("VYKHUKHOL_DATA", None)
        result = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                                timeout=60, env=env, cwd=self.root)
        hand_to_web_user(self.data)
        hand_to_web_user(self.install / "archive")  # the sender writes it, as the web user here
        assert result.returncode == 0, f"vykhukhol {args[-1]}: {result.stderr}"
        return result.stdout

    def subscriber_states(self, service: str) -> dict[str, str]:
        """email → state, straight from subscribers.txt (tab-separated)."""
        found = list(self.data.glob(f"services/*/{service}/subscribers.txt"))
        lines = found[0].read_text(encoding="utf-8").splitlines() if found else []
        rows = (line.split("\t") for line in lines if not line.startswith("#"))
        return {row[0]: row[2] for row in rows if len(row) > 2}


def _set_up(site: Site, example: bool = False) -> None:
    """The steps of docs/deploying/apache.md#deploy-apache, then a service with one
    letter (``example``: the one step 6's example makes, by its own commands)."""
    upload(site.install)
    vendored = vendor(DEPENDENCIES, site.install / "lib")
    # Step 1, end: the bytecode, compiled by the files' owner for the Python the
    # web server runs; www-data cannot write lib/__pycache__ (docs/deploying/apache.md#apache-step-1).
    python = python_for_web_user()
    subprocess.run([python, "-m", "compileall", "-q", "--invalidation-mode", "checked-hash",
                    str(site.install / "lib")], check=True,
                   capture_output=True, timeout=300)
    write_htaccess(site.install)
    set_modes(site.install)
    if site.pointer:  # step 5, the other way: the data outside the web root
        (site.install / "cgi" / "vykhukhol.path").write_text(f"{site.data}\n", encoding="utf-8")
    # Step 6: init (exactly the notes' command when the data is found through
    # the pointer: no --data, no --cgi-dir), then what the owner configures.
    where = [] if site.pointer else ["--cgi-dir", str(site.install / "cgi")]
    init = site.cli("init", *where, "--site-url", site.base, "--admin-email", "admin@example.org",
                    "--password", PASSWORD)
    found = re.search(r"^cron URL: (\S+)$", init, re.M)
    assert found and f"initialised {site.data}" in init, init
    site.cron_url = found.group(1)
    if not example:
        site.cli_batch(
            ("mode", "working"),
            ("db", "add", "main"),
            ("service", "add", "news", "--db", "main", "--title", "Apache News",
             "--from-email", "news@example.org"),
            ("letter", "add", "news", "--subject", "Lesson one", "--delay", "0s",
             "--body", "Hello {{ name }}, this is lesson one."),
            ("service", "enable", "news"))

    # A clear message here beats a bare 500 from every script.
    check = subprocess.run(
        [python, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
         "import jinja2, multipart, email_validator, vykhukhol.web.subscription; "
         "from vykhukhol.watch import health; print(health.bytecode_missing())",
         str(site.install / "lib")], capture_output=True, text=True, timeout=60, cwd="/",
        **as_web_user())
    assert check.returncode == 0, f"{python} as {WEB_USER} cannot import from lib/ " \
                                  f"(vendored {vendored}): {check.stderr}"
    assert check.stdout.strip() == "[]", f"bytecode missing for {python}: {check.stdout}"
    (site.root / "bin" / "python3").symlink_to(python)
    if example:
        run_example(site)


def _wait_for_port(site: Site, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"apache2 exited with {process.returncode}:\n{site.error_log()}")
        try:
            socket.create_connection(("127.0.0.1", site.port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"apache2 did not listen on 127.0.0.1:{site.port} within 15 s")


@contextlib.contextmanager
def served(data_outside: bool, example: bool = False) -> Iterator[Site]:
    """An installed, initialised Vykhukhol behind a running Apache."""
    root = Path(tempfile.mkdtemp(prefix="vykhukhol-apache-"))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    install = root / "install"
    data = root / "private" / "data" if data_outside else install / "data"
    site = Site(root, install, data, data_outside, port)
    try:
        with traversable(root):
            for folder in ("run", "bin", "private"):
                (root / folder).mkdir(mode=0o755)
                (root / folder).chmod(0o755)
            _set_up(site, example)
            user = f"User {WEB_USER}\nGroup {WEB_USER}" if os.geteuid() == 0 else ""
            conf = root / "httpd.conf"
            conf.write_text(HTTPD_CONF.format(root=root, port=port, user=user, modules=MODULES,
                                              docroot=install), encoding="utf-8")
            command = [str(APACHE), "-d", str(root), "-f", str(conf)]
            env = {"PATH": f"{root / 'bin'}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
            syntax = subprocess.run([*command, "-t"], capture_output=True, text=True, env=env,
                                    timeout=30)
            assert syntax.returncode == 0, syntax.stderr
            # A session of its own: prefork stops by signalling its whole process group.
            process = subprocess.Popen([*command, "-D", "FOREGROUND"], env=env,
                                       start_new_session=True, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
            try:
                _wait_for_port(site, process)
                yield site
            finally:
                subprocess.run([*command, "-k", "stop"], env=env, capture_output=True, timeout=30)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=5)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def apache() -> Iterator[Site]:
    """Data in the shipped data/, kept off the web by its .htaccess."""
    with served(data_outside=False) as site:
        yield site


def _wait_for_letters(smtp_server, count: int, timeout: float = 10) -> list:
    deadline = time.monotonic() + timeout
    while len(smtp_server.handler.received) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return smtp_server.handler.received


def subscribe_and_confirm(site, smtp_server, address: str) -> None:
    """Point the site at the test SMTP server, subscribe ``address`` through the
    form and confirm it by the button behind the letter's link (also used by
    tests/integration/test_passenger.py)."""
    site.cli_batch(("settings", "set", "mail.transport", "smtp"),
                   ("settings", "set", "mail.smtp_host", "127.0.0.1"),
                   ("settings", "set", "mail.smtp_port", str(smtp_server.port)),
                   ("settings", "set", "mail.from_email", "news@example.org"))
    form_page = fetch(f"{site.base}/cgi/subscribe.py?service=news")
    assert form_page.status == 200, (form_page, site.error_log())
    action, fields = only_form(form_page)
    assert action == "subscribe.py", form_page
    fields.update(email=address, name="Reader")
    time.sleep(2.1)  # a person's pace: a form posted faster than 2 s is a bot's
    answer = fetch(f"{site.base}/cgi/{action}", fields)
    assert answer.status == 200, (answer, site.error_log())

    letters = _wait_for_letters(smtp_server, 1)
    assert len(letters) == 1, site.error_log()
    assert site.subscriber_states("news") == {address: "new"}  # stored after the answer
    assert letters[0].rcpt_tos == [address]
    links = re.findall(rf"{re.escape(site.base)}/cgi/confirm\.py\?\S+", plain_text(letters[0].message))
    assert len(links) == 1, plain_text(letters[0].message)

    button = fetch(links[0])
    assert button.status == 200, button
    assert site.subscriber_states("news") == {address: "new"}, "a GET must change nothing"
    action, fields = only_form(button)
    assert action == "confirm.py", button
    confirmed = fetch(f"{site.base}/cgi/{action}", fields)
    assert confirmed.status == 200, (confirmed, site.error_log())
    assert site.subscriber_states("news") == {address: "active"}


def cron_by_wget_sends_lesson_one(site, smtp_server, address: str):
    """Fetch the cron URL with the real wget; letter 1 of the series arrives. Returns it."""
    run = subprocess.run([WGET, "-q", "-t", "1", "-O", "-", site.cron_url],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, (run.returncode, run.stderr, site.error_log())
    letters = _wait_for_letters(smtp_server, 2)
    assert len(letters) == 2, (run.stdout, site.error_log())
    lesson = letters[1].message
    assert letters[1].rcpt_tos == [address]
    assert lesson["Subject"] == "Lesson one"
    assert "Hello Reader, this is lesson one." in plain_text(lesson)
    assert run.stdout.startswith(f"run {lesson['X-Vykhukhol-Run']}\n"), run.stdout
    return lesson

"""Vykhukhol under a real Apache with Phusion Passenger, laid out as cPanel's
"Setup Python App" lays it out (docs/deploying/passenger.md#deploy-passenger).

The application root (a copy of the checkout, with passenger_wsgi.py) lives
outside the web root, in ~/vykhukhol; the app answers at the URL /lists,
named in public_html/lists/.htaccess by the same Passenger directives the
panel writes there (PassengerAppRoot, PassengerBaseURI, PassengerPython); the
Python is a virtualenv's, holding the dependencies as `pip install` leaves
them (copied offline from this test run's distributions, as test_apache.py
vendors them). Through it a subscriber subscribes, confirms, gets letter 1
after the real wget fetched the secret cron URL, the admin login works
below /lists, and the data directory, the library and the startup file are
refused. A second app at /other finds its data directory, outside both
application roots, through `SetEnv VYKHUKHOL_DATA` in its folder's block.

Passenger is Debian's libapache2-mod-passenger, with its update check and
anonymous telemetry off (nothing leaves this machine). Run as root (as CI
does), Passenger starts the app as PassengerDefaultUser, www-data (the
copy's files belong to root, whom Passenger never runs an app as), so the
data directory is handed to www-data as on a host without suEXEC.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from support.apachekit import (  # the mod_cgi test's installation steps and HTTP helpers
    APACHE,
    CHECKOUT,
    DEPENDENCIES,
    MODULES,
    PASSWORD,
    WEB_USER,
    Site,
    _wait_for_port,
    cron_by_wget_sends_lesson_one,
    fetch,
    only_form,
    python_for_web_user,
    set_modes,
    subscribe_and_confirm,
    traversable,
    upload,
)
from support.vendorkit import vendor
from support.webkit import wait_for

PASSENGER = MODULES / "mod_passenger.so"
PASSENGER_CONF = Path("/etc/apache2/mods-available/passenger.conf")  # Debian's, names PassengerRoot
MOUNT = "/lists"

pytestmark = pytest.mark.skipif(
    not (APACHE.exists() and PASSENGER.exists() and PASSENGER_CONF.exists()),
    reason="Apache with Passenger is not installed (apt-get install apache2 libapache2-mod-passenger)")

HTTPD_CONF = """\
# A shared host with Passenger in miniature, for tests/integration/test_passenger.py.
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
LoadModule mime_module {modules}/mod_mime.so
LoadModule dir_module {modules}/mod_dir.so
LoadModule env_module {modules}/mod_env.so
LoadModule passenger_module {modules}/mod_passenger.so
StartServers 1
MinSpareServers 1
MaxSpareServers 2
MaxRequestWorkers 8
Timeout 60
TypesConfig /etc/mime.types
AccessFileName .htaccess
PassengerRoot {passenger_root}
PassengerDefaultRuby /usr/bin/ruby
PassengerDisableSecurityUpdateCheck on
PassengerDisableAnonymousTelemetry on
PassengerInstanceRegistryDir "{root}/run"
PassengerLogFile "{root}/passenger.log"
PassengerDefaultUser {web_user}
PassengerDefaultGroup {web_user}
PassengerMaxPoolSize 2
DocumentRoot "{docroot}"
<Directory />
    Options None
    AllowOverride None
    Require all denied
</Directory>
<Directory "{docroot}">
    Options FollowSymLinks
    AllowOverride All
    Require all granted
</Directory>
<Files ".ht*">
    Require all denied
</Files>
"""

# What the panel writes into public_html/lists/.htaccess for the app (the
# form's fields: application root, URL, Python, startup file). cPanel's
# Passenger (CloudLinux's build) reads them there; Debian's refuses
# PassengerAppRoot in an .htaccess ("not allowed here"), so this test puts the
# very same lines in a <Directory> block for that folder instead.
APP_BLOCK = """\
<Directory "{folder}">
    PassengerAppRoot "{app_root}"
    PassengerBaseURI "{mount}"
    PassengerPython "{python}"
    PassengerAppType wsgi
    PassengerStartupFile passenger_wsgi.py
{env}</Directory>
"""


@dataclass
class PassengerSite(Site):
    """An application root served at ``mount``; ``cli`` runs as over SSH in it."""

    docroot: Path = Path()
    mount: str = MOUNT
    app_block: str = ""
    other: PassengerSite | None = None  # a second app, its data named by SetEnv

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.mount}"

    def error_log(self) -> str:
        logs = (self.root / name for name in ("error.log", "passenger.log"))
        return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in logs if p.exists())


def _passenger_root() -> str:
    found = re.search(r"^\s*PassengerRoot\s+(\S+)", PASSENGER_CONF.read_text(encoding="utf-8"), re.M)
    assert found, f"no PassengerRoot in {PASSENGER_CONF}"
    return found.group(1)


def _virtualenv(python: str, target: Path) -> Path:
    """What the panel makes: a virtualenv, and what `pip install .` puts in it."""
    subprocess.run([python, "-m", "venv", "--without-pip", str(target)], check=True,
                   capture_output=True, timeout=60)
    venv_python = target / "bin" / "python"
    purelib = subprocess.run(
        [str(venv_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=30).stdout.strip()
    vendor(DEPENDENCIES, Path(purelib))
    return venv_python


def _set_up(site: PassengerSite, python: Path, env: str = "") -> None:
    upload(site.install)
    shutil.copyfile(CHECKOUT / "passenger_wsgi.py", site.install / "passenger_wsgi.py")
    set_modes(site.install)
    folder = site.docroot / site.mount.strip("/")
    folder.mkdir(parents=True)
    site.app_block = APP_BLOCK.format(folder=folder, app_root=site.install, mount=site.mount,
                                      python=python, env=env)
    init = site.cli("init", "--site-url", site.base, "--admin-email", "admin@example.org",
                    "--password", PASSWORD)
    found = re.search(r"^cron URL: (\S+)$", init, re.M)
    assert found and f"initialised {site.data}" in init, init
    site.cron_url = found.group(1)
    site.cli_batch(
        ("mode", "working"),
        ("db", "add", "main"),
        ("service", "add", "news", "--db", "main", "--title", f"News at {site.mount}",
         "--from-email", "news@example.org"),
        ("letter", "add", "news", "--subject", "Lesson one", "--delay", "0s",
         "--body", "Hello {{ name }}, this is lesson one."),
        ("service", "enable", "news"))


@contextlib.contextmanager
def served() -> Iterator[PassengerSite]:
    root = Path(tempfile.mkdtemp(prefix="vykhukhol-passenger-"))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    app_root = root / "vykhukhol"
    site = PassengerSite(root, app_root, app_root / "data", True, port, docroot=root / "public_html")
    # The data outside both, named by VYKHUKHOL_DATA as a panel's "Environment variables" set it.
    other = PassengerSite(root, root / "other-app", root / "private" / "data", False, port,
                          docroot=site.docroot, mount="/other")
    try:
        with traversable(root):
            for folder in ("run", "public_html", "private"):
                (root / folder).mkdir(mode=0o755)
                (root / folder).chmod(0o755)
            python = _virtualenv(python_for_web_user(), root / "virtualenv" / "vykhukhol")
            _set_up(site, python)
            _set_up(other, python, f'    SetEnv VYKHUKHOL_DATA "{other.data}"\n')
            site.other = other
            user = f"User {WEB_USER}\nGroup {WEB_USER}" if os.geteuid() == 0 else ""
            web_user = WEB_USER if os.geteuid() == 0 else _own_user()
            conf = root / "httpd.conf"
            conf.write_text(HTTPD_CONF.format(
                root=root, port=port, user=user, modules=MODULES, docroot=site.docroot,
                passenger_root=_passenger_root(), web_user=web_user) + site.app_block + other.app_block,
                encoding="utf-8")
            command = [str(APACHE), "-d", str(root), "-f", str(conf)]
            env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
            syntax = subprocess.run([*command, "-t"], capture_output=True, text=True, env=env,
                                    timeout=30)
            assert syntax.returncode == 0, syntax.stderr
            process = subprocess.Popen([*command, "-D", "FOREGROUND"], env=env,
                                       start_new_session=True, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
            try:
                _wait_for_port(site, process)
                yield site
            finally:
                subprocess.run([*command, "-k", "stop"], env=env, capture_output=True, timeout=30)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, 9)
                    process.wait(timeout=5)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _own_user() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name


@pytest.fixture(scope="module")
def passenger() -> Iterator[PassengerSite]:
    with served() as site:
        yield site


# --- the tests --------------------------------------------------------------------------

def test_a_subscriber_goes_the_whole_way_through_passenger_and_wget(passenger: PassengerSite,
                                                                   smtp_server) -> None:
    """Subscribe, confirm and a cron run fetched by wget work with the app mounted at /lists."""
    site = passenger
    address = "reader@example.com"
    subscribe_and_confirm(site, smtp_server, address)
    if os.geteuid() == 0:  # rewritten by the app: Passenger ran it as www-data, never as root
        import pwd

        written = next(site.data.glob("services/*/news/subscribers.txt"))
        assert pwd.getpwuid(written.stat().st_uid).pw_name == WEB_USER

    assert site.cron_url.startswith(f"{site.base}/cgi/cron-"), site.cron_url
    cron_by_wget_sends_lesson_one(site, smtp_server, address)
    assert "Traceback" not in site.error_log()


def test_the_admin_logs_in_below_the_mount(passenger: PassengerSite) -> None:
    """The admin's links, form and cookie stay below /lists, where Passenger mounts the app."""
    site = passenger
    first = fetch(f"{site.base}/admin/")
    assert first.status == 303, (first, site.error_log())
    login_url = first.headers["location"]
    assert urlsplit(login_url).path.startswith(f"{MOUNT}/admin/"), first
    login = fetch(f"http://127.0.0.1:{site.port}{urlsplit(login_url).path}")
    assert login.status == 200, (login, site.error_log())
    assert login.headers["content-type"].startswith("text/html"), login
    action, fields = only_form(login)
    assert action.startswith(f"{MOUNT}/admin/"), login
    fields["password"] = PASSWORD
    entered = fetch(f"http://127.0.0.1:{site.port}{action}", fields)
    assert entered.status == 303, (entered, site.error_log())
    assert f"Path={MOUNT}/admin" in entered.headers.get("set-cookie", ""), entered.headers
    assert urlsplit(entered.headers["location"]).path.startswith(f"{MOUNT}/admin/"), entered


def test_vykhukhol_data_set_in_the_apache_config_reaches_the_app(passenger: PassengerSite) -> None:
    """SetEnv VYKHUKHOL_DATA for the app's folder names its data directory, under
    Passenger too (docs/reference/data-files.md#data-files-where)."""
    other = passenger.other
    assert other is not None and not (other.install / "data" / "settings.ini").exists()
    form_page = fetch(f"{other.base}/cgi/subscribe.py?service=news")
    assert form_page.status == 200, (form_page, other.error_log())
    assert "News at /other" in form_page.body, form_page
    answer = fetch(f"{other.base}/cgi/subscribe.py", {"service": "news", "email": "far@example.com"})
    assert answer.status == 200, (answer, other.error_log())
    assert wait_for(lambda: other.subscriber_states("news")) == {"far@example.com": "new"}  # stored after the answer
    assert passenger.subscriber_states("news").get("far@example.com") is None


def test_the_shipped_cron_name_is_gone_after_init(passenger: PassengerSite) -> None:
    """Only the renamed cron script answers; cgi/cron.py, renamed by init, is 404."""
    assert fetch(f"{passenger.base}/cgi/cron.py").status == 404
    assert fetch(f"{passenger.base}/cgi/cron-0123456789abcdef.py").status == 404


@pytest.mark.parametrize("path", [
    f"{MOUNT}/data/settings.ini", f"{MOUNT}/data/services/", f"{MOUNT}/lib/vykhukhol/settings/__init__.py",
    f"{MOUNT}/passenger_wsgi.py", f"{MOUNT}/lib/", f"{MOUNT}/cgi/vykhukhol.path",
    "/data/settings.ini"])
def test_the_data_directory_and_the_sources_are_refused(passenger: PassengerSite, path: str) -> None:
    """Nothing of the application root is served: not settings, subscribers, sources, or the startup file."""
    assert (passenger.data / "settings.ini").exists()
    answer = fetch(f"http://127.0.0.1:{passenger.port}{path}")
    assert answer.status in (403, 404), answer
    assert "secret" not in answer.body.lower(), answer
    assert "import" not in answer.body, answer
    assert "@" not in answer.body, answer


def test_the_public_archive_is_served_by_the_app_below_the_mount(passenger: PassengerSite) -> None:
    """The public archive (docs/using/archive.md#archive): the run (the cron URL, as www-data) writes archive/; the app's own route
    serves its pages and feed at /lists/archive/, and nothing of another shape."""
    site = passenger
    site.cli_batch(
        ("settings", "set", "mail.transport", "outbox"),
        ("service", "add", "digest", "--db", "main", "--title", "Digest"),
        ("letter", "add", "digest", "--subject", "Public one", "--delay", "0s",
         "--body", "Hello {{ name }}: {{ web_url }}", "--public"),
        ("archive", "on", "digest"),
        ("subscriber", "add", "digest", "passenger.reader@example.com", "--name", "Pat Reader",
         "--confirmed"),
        ("service", "enable", "digest"))
    run = subprocess.run(["wget", "-q", "-t", "1", "-O", "-", site.cron_url],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "handed over 1 for digest" in run.stdout, (run, site.error_log())
    base = f"{site.base}/archive/digest/"
    index = fetch(base)
    assert index.status == 200 and 'href="letter-001.html"' in index.body, (index, site.error_log())
    page = fetch(base + "letter-001.html")
    assert page.status == 200 and "Public one" in page.body and "Pat Reader" not in page.body
    assert f'Hello : <a href="{base}letter-001.html"' in page.body  # web_url: the page itself
    feed = fetch(base + "feed.atom")
    assert feed.status == 200 and feed.headers["content-type"].startswith("application/atom+xml")
    for path in ("/archive/digest/notes.txt", "/archive/digest/.htaccess", "/archive/",
                 "/archive/digest/%2e%2e/%2e%2e/data/settings.ini"):
        answer = fetch(site.base + path)
        assert answer.status in (403, 404), (path, answer)
        assert "secret" not in answer.body.lower(), (path, answer)

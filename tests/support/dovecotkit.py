"""A real IMAP and POP3 server for the bounce tests: Dovecot, as our own process.

:func:`start` writes a throwaway configuration into a fresh folder (a
self-signed certificate made with the ``openssl`` command, a passwd-file
with one user and a plain password, ``mail_location = maildir:…``, every
runtime file under that folder), starts ``dovecot -F`` on four free
loopback ports (imap, imaps, pop3, pop3s) and waits until they answer.
Nothing of the system's Dovecot (its service, /etc/dovecot, /run/dovecot) is
used. Messages arrive the way a local delivery agent delivers them: a file
written into ``Maildir/new`` (:meth:`Dovecot.deliver`).

Run as root, Dovecot refuses to run its login processes or to open a
mailbox as root: the logins run as ``dovenull`` and the mail as ``dovecot``
(the Debian package's users), which own the mail folder. Run as another
user, everything runs as that user.

A test module takes the fixtures with ``from support.dovecotkit import
dovecot_fixture, dovecot_server_fixture`` and asks for ``dovecot``.

Needs the Debian packages dovecot-imapd and dovecot-pop3d (``.ci/run``
installs them); tests skip without them.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

USER, PASSWORD = "bounces", "mailbox-secret-1"
DOVECOT = shutil.which("dovecot") or "/usr/sbin/dovecot"


def available() -> bool:
    return Path(DOVECOT).exists() and shutil.which("openssl") is not None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Dovecot:
    folder: Path
    process: subprocess.Popen
    ports: dict[str, int] = field(default_factory=dict)
    owner: tuple[int, int] = (-1, -1)

    @property
    def cafile(self) -> Path:
        return self.folder / "cert.pem"

    @property
    def maildir(self) -> Path:
        return self.folder / "Maildir"

    def url(self, scheme: str, folder: str = "") -> str:
        tail = f"/{folder}" if folder else ""
        return f"{scheme}://{USER}:{PASSWORD}@127.0.0.1:{self.ports[scheme]}{tail}"

    def deliver(self, raw: bytes) -> Path:
        """Put a message into the inbox as a delivery agent does (tmp/, then new/)."""
        name = f"{time.time():.6f}.{uuid.uuid4().hex}.vykhukhol-test"
        tmp = self.maildir / "tmp" / name
        tmp.write_bytes(raw)
        os.chown(tmp, *self.owner) if os.geteuid() == 0 else None
        target = self.maildir / "new" / name
        os.rename(tmp, target)
        return target

    def messages(self, folder: str = "") -> list[bytes]:
        """The messages of a folder ("" the inbox, else e.g. "Processed"), read from the disk."""
        base = self.maildir / (f".{folder}" if folder else "")
        found = []
        for sub in ("new", "cur"):
            if (base / sub).is_dir():
                found += [p.read_bytes() for p in sorted((base / sub).iterdir())]
        return found

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        shutil.rmtree(self.folder, ignore_errors=True)


def _config(folder: Path, ports: dict[str, int], login_user: str, mail_user: str,
            uid: int, gid: int) -> str:
    return f"""\
base_dir = {folder}/run
state_dir = {folder}/state
listen = 127.0.0.1
protocols = imap pop3
log_path = {folder}/log/dovecot.log
info_log_path = {folder}/log/dovecot.log
ssl = yes
ssl_cert = <{folder}/cert.pem
ssl_key = <{folder}/key.pem
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = {mail_user}
default_internal_group = {mail_user}
default_login_user = {login_user}
first_valid_uid = {min(uid, 100)}
first_valid_gid = 0
mail_location = maildir:{folder}/Maildir
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {folder}/passwd
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={folder}
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    port = {ports['imap']}
  }}
  inet_listener imaps {{
    port = {ports['imaps']}
    ssl = yes
  }}
}}
service pop3-login {{
  chroot =
  inet_listener pop3 {{
    port = {ports['pop3']}
  }}
  inet_listener pop3s {{
    port = {ports['pop3s']}
    ssl = yes
  }}
}}
service anvil {{
  chroot =
}}
"""


def start() -> Dovecot:
    folder = Path(tempfile.mkdtemp(prefix="vykhukhol-dovecot-"))
    os.chmod(folder, 0o755)  # the mail processes (another user, under root) must reach it
    for sub in ("run", "state", "log", "Maildir/new", "Maildir/cur", "Maildir/tmp"):
        (folder / sub).mkdir(parents=True)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem"),
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    (folder / "passwd").write_text(f"{USER}:{{PLAIN}}{PASSWORD}::::\n")
    if os.geteuid() == 0:
        login_user, mail_user = "dovenull", "dovecot"
        account = pwd.getpwnam(mail_user)
        uid, gid = account.pw_uid, account.pw_gid
        for path in [folder / "Maildir", *(folder / "Maildir").iterdir()]:
            os.chown(path, uid, gid)
    else:
        login_user = mail_user = pwd.getpwuid(os.geteuid()).pw_name
        uid, gid = os.geteuid(), os.getegid()
    ports = {name: _free_port() for name in ("imap", "imaps", "pop3", "pop3s")}
    conf = folder / "dovecot.conf"
    conf.write_text(_config(folder, ports, login_user, mail_user, uid, gid))
    process = subprocess.Popen([DOVECOT, "-F", "-c", str(conf)], stdout=subprocess.DEVNULL,
                               stderr=open(folder / "log" / "stderr", "wb"))
    server = Dovecot(folder, process, ports, (uid, gid))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log = (folder / "log" / "stderr").read_text(errors="replace")
            server.stop()
            raise RuntimeError(f"dovecot exited: {log}")
        with contextlib.suppress(OSError):
            for port in ports.values():
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server
        time.sleep(0.1)
    server.stop()
    raise RuntimeError("dovecot did not start listening")


@pytest.fixture(scope="module", name="dovecot_server")
def dovecot_server_fixture():
    """One Dovecot for a test module; each test empties the mailbox first."""
    if not available():
        pytest.skip("dovecot (dovecot-imapd, dovecot-pop3d) or openssl is not installed")
    server = start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(name="dovecot")
def dovecot_fixture(dovecot_server: Dovecot) -> Dovecot:
    """The module's Dovecot with an empty inbox and no Processed folder."""
    maildir = dovecot_server.maildir
    for sub in ("new", "cur", "tmp"):
        for path in (maildir / sub).iterdir():
            path.unlink()
    for path in maildir.iterdir():
        if path.name.startswith("."):
            shutil.rmtree(path, ignore_errors=True)
    return dovecot_server

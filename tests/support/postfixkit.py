"""A real mail server for the delivery tests: Postfix, as our own instance.

:func:`start` writes a throwaway configuration into a fresh folder (its own
``main.cf`` and ``master.cf``, queue and data directories under that folder,
chroot off), and starts ``postfix -c FOLDER start`` with one SMTP listener on
a free loopback port. Nothing of the system's Postfix (its service, its
queue, /etc/postfix/main.cf) is used or touched; only the Debian package's
programs and its ``postfix`` user.

What it does with mail, the way a relay on a host does (it accepts first and
bounces later):
- ``gone.example.org``: accepted, then returned by the ``error:`` transport
  with ``5.1.1 user unknown`` (an address that does not exist);
- ``full.example.org``: accepted, then returned with ``5.2.2 mailbox full``
  (a mailbox that cannot take it: soft);
- ``blocked.example.org``: accepted, then returned with ``5.7.1 … blocked``
  for the *sender's* reputation (nothing to count on the subscriber);
- ``later.example.org``: accepted and kept in the queue (``retry:``: the
  next hop is down), as a slow destination does;
- a recipient listed in :attr:`Postfix.greylisted` gets ``450 4.2.0`` at RCPT
  time, as a greylisting server answers;
- ``ok.example.org``: accepted and delivered into the fixture's own maildir
  (:attr:`Postfix.delivered`);
- the bounce domain (``lists.example.org``): delivered by Postfix's
  ``virtual`` agent straight into the Dovecot fixture's Maildir, with
  ``recipient_delimiter = +``, so every tagged bounce address
  ``news+<tag>@lists.example.org`` lands in the one INBOX that the bounce
  reader reads.

No name is resolved: every domain is routed by ``transport_maps`` and DNS
lookups are off. Needs the Debian package postfix (``.ci/run`` installs it);
tests skip without it or when not run as root (Postfix's master must start
as root).
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
from dataclasses import dataclass, field
from pathlib import Path

import pytest

POSTFIX = shutil.which("postfix") or "/usr/sbin/postfix"
POSTMAP = shutil.which("postmap") or "/usr/sbin/postmap"
BOUNCE_DOMAIN = "lists.example.org"
ROUTES = {
    "gone.example.org": "error:5.1.1 User unknown in virtual mailbox table",
    "full.example.org": "error:5.2.2 mailbox full, quota exceeded",
    "blocked.example.org": ("error:5.7.1 Service unavailable; client host [127.0.0.1] "
                            "blocked using zen.spamhaus.org"),
    "later.example.org": "retry:4.4.1 connection timed out",
}


def available() -> bool:
    return Path(POSTFIX).exists() and Path(POSTMAP).exists() and os.geteuid() == 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Postfix:
    folder: Path
    port: int
    greylisted: list[str] = field(default_factory=list)

    @property
    def config(self) -> Path:
        return self.folder / "conf"

    @property
    def delivered(self) -> Path:
        """Maildir of the mail that reached ``ok.example.org``."""
        return self.folder / "ok" / "Maildir"

    def postconf(self, *args: str) -> str:
        return subprocess.run(["postconf", "-c", str(self.config), *args], check=True,
                              capture_output=True, text=True, timeout=30).stdout

    def queue(self) -> str:
        """What is still in the queue (``postqueue -p``), for the tests' messages."""
        return subprocess.run(["postqueue", "-c", str(self.config), "-p"], capture_output=True,
                              text=True, timeout=30).stdout

    def flush(self) -> None:
        """Ask the queue manager to try every deferred letter again now."""
        subprocess.run(["postqueue", "-c", str(self.config), "-f"], capture_output=True,
                       timeout=30)

    def log(self) -> str:
        path = self.folder / "log" / "postfix.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        subprocess.run([POSTFIX, "-c", str(self.config), "abort"], capture_output=True,
                       timeout=30)
        pid_file = self.folder / "queue" / "pid" / "master.pid"
        with contextlib.suppress(OSError, ValueError):
            pid = int(pid_file.read_text().split()[0])
            for _ in range(50):
                os.kill(pid, 0)
                time.sleep(0.1)
            os.kill(pid, 9)
        shutil.rmtree(self.folder, ignore_errors=True)


def _main_cf(folder: Path, mailbox_base: Path, uid: int, gid: int) -> str:
    return f"""\
compatibility_level = 3.6
queue_directory = {folder}/queue
data_directory = {folder}/data
command_directory = /usr/sbin
daemon_directory = /usr/lib/postfix/sbin
meta_directory = /etc/postfix
shlib_directory = /usr/lib/postfix
mail_owner = postfix
setgid_group = postdrop
maillog_file = {folder}/log/postfix.log
maillog_file_prefixes = {folder}/log
myhostname = mx.{BOUNCE_DOMAIN}
mydomain = {BOUNCE_DOMAIN}
myorigin = $myhostname
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
smtp_dns_support_level = disabled
smtp_host_lookup = native
lmtp_host_lookup = native
disable_dns_lookups = yes
relay_domains = gone.example.org full.example.org blocked.example.org later.example.org
transport_maps = texthash:{folder}/conf/transport
virtual_mailbox_domains = {BOUNCE_DOMAIN} ok.example.org
virtual_mailbox_base = /
virtual_mailbox_maps = texthash:{folder}/conf/mailboxes
virtual_uid_maps = static:{uid}
virtual_gid_maps = static:{gid}
virtual_minimum_uid = 1
recipient_delimiter = +
smtpd_reject_unlisted_recipient = no
smtpd_recipient_restrictions = check_recipient_access texthash:{folder}/conf/greylist, permit_mynetworks, reject_unauth_destination
smtpd_banner = $myhostname ESMTP
queue_run_delay = 2s
minimal_backoff_time = 2s
maximal_backoff_time = 10s
bounce_queue_lifetime = 5d
maximal_queue_lifetime = 5d
delay_warning_time = 0
biff = no
append_dot_mydomain = no
smtputf8_enable = no
message_size_limit = 10240000
"""


_MASTER_CF = """\
{port}   inet  n  -  n  -  -  smtpd
pickup    unix  n  -  n  60  1  pickup
cleanup   unix  n  -  n  -  0  cleanup
qmgr      unix  n  -  n  300  1  qmgr
tlsmgr    unix  -  -  n  1000?  1  tlsmgr
rewrite   unix  -  -  n  -  -  trivial-rewrite
bounce    unix  -  -  n  -  0  bounce
defer     unix  -  -  n  -  0  bounce
trace     unix  -  -  n  -  0  bounce
verify    unix  -  -  n  -  1  verify
flush     unix  n  -  n  1000?  0  flush
proxymap  unix  -  -  n  -  -  proxymap
proxywrite unix -  -  n  -  1  proxymap
smtp      unix  -  -  n  -  -  smtp
relay     unix  -  -  n  -  -  smtp
showq     unix  n  -  n  -  -  showq
error     unix  -  -  n  -  -  error
retry     unix  -  -  n  -  -  error
discard   unix  -  -  n  -  -  discard
local     unix  -  n  n  -  -  local
virtual   unix  -  n  n  -  -  virtual
lmtp      unix  -  -  n  -  -  lmtp
anvil     unix  -  -  n  -  1  anvil
scache    unix  -  -  n  -  1  scache
postlog   unix-dgram n  -  n  -  1  postlogd
"""


def start(bounce_maildir: Path, owner: tuple[int, int]) -> Postfix:
    """A Postfix that delivers the bounce domain into ``bounce_maildir`` (a
    Maildir/ folder owned by ``owner``, uid and gid: the Dovecot fixture's)."""
    folder = Path(tempfile.mkdtemp(prefix="vykhukhol-postfix-"))
    os.chmod(folder, 0o755)
    for sub in ("conf", "queue", "data", "log", "ok/Maildir/new", "ok/Maildir/cur",
                "ok/Maildir/tmp"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    account = pwd.getpwnam("postfix")
    os.chown(folder / "data", account.pw_uid, account.pw_gid)
    uid, gid = owner if owner[0] >= 0 else (os.geteuid(), os.getegid())
    for path in (folder / "ok", *(folder / "ok").rglob("*")):
        os.chown(path, uid, gid)
    port = _free_port()
    conf = folder / "conf"
    (conf / "main.cf").write_text(_main_cf(folder, bounce_maildir, uid, gid))
    (conf / "master.cf").write_text(_MASTER_CF.format(port=f"127.0.0.1:{port}"))
    (conf / "transport").write_text("".join(
        f"{domain}\t{route}\n" for domain, route in ROUTES.items()))
    # virtual(8) wants a path that ends in "/" for a Maildir, relative to
    # virtual_mailbox_base ("/"), so the absolute path without its first "/".
    (conf / "mailboxes").write_text(
        f"@{BOUNCE_DOMAIN}\t{str(bounce_maildir).lstrip('/')}/\n"
        f"@ok.example.org\t{str(folder / 'ok' / 'Maildir').lstrip('/')}/\n")
    (conf / "greylist").write_text("")
    server = Postfix(folder, port)
    result = subprocess.run([POSTFIX, "-c", str(conf), "start"], capture_output=True, text=True,
                            timeout=60)
    if result.returncode != 0:
        log = server.log()
        server.stop()
        raise RuntimeError(f"postfix did not start: {result.stderr}{result.stdout}\n{log}")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
                if sock.recv(100).startswith(b"220"):
                    return server
        time.sleep(0.2)
    log = server.log()
    server.stop()
    raise RuntimeError(f"postfix did not answer on its port:\n{log}")


def greylist(server: Postfix, *addresses: str) -> None:
    """From now on these recipients get ``450 4.2.0`` at RCPT, as a greylisting server answers."""
    server.greylisted = list(addresses)
    answer_at_rcpt(server, {address: "450 4.2.0 Greylisted, try again later"
                            for address in addresses})


def answer_at_rcpt(server: Postfix, answers: dict[str, str]) -> None:
    """From now on each of these recipients gets its answer (``"550 5.1.1 User
    unknown"``) to RCPT TO; every other recipient is accepted."""
    (server.config / "greylist").write_text("".join(
        f"{address}\t{answer}\n" for address, answer in answers.items()))
    subprocess.run([POSTFIX, "-c", str(server.config), "reload"], capture_output=True, timeout=30)
    time.sleep(1)  # the running smtpd processes finish; new ones read the map


def wait_for(condition, seconds: float = 20.0, step: float = 0.2):
    """Poll ``condition()`` until it is true (returns its value) or time runs out (None)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    return None


@pytest.fixture(scope="module", name="postfix_server")
def postfix_server_fixture(dovecot_server):
    """One Postfix for a test module, bouncing into the module's Dovecot."""
    if not available():
        pytest.skip("postfix is not installed, or the tests do not run as root")
    server = start(dovecot_server.maildir, dovecot_server.owner)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(name="postfix")
def postfix_fixture(postfix_server: Postfix, dovecot) -> Postfix:
    """The module's Postfix with an empty queue, no RCPT answers, and an empty
    Dovecot inbox (``dovecot``: the fixture that empties it)."""
    subprocess.run(["postsuper", "-c", str(postfix_server.config), "-d", "ALL"],
                   capture_output=True, timeout=30)
    if postfix_server.greylisted or (postfix_server.config / "greylist").read_text():
        postfix_server.greylisted = []
        answer_at_rcpt(postfix_server, {})
    return postfix_server

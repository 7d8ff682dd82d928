"""One source of truth for what a host needs.

The vendoring commands of docs/deploying/apache.md#apache-step-1 install exactly what setup.cfg declares; with
exactly that vendored into a lib/ folder, Debian's own /usr/bin/python3,
started with -S (no site-packages, no dist-packages, never the test's venv),
reads a genuine DSN with `vykhukhol bounce`, makes a key with `dkim keygen`
and signs the letters of a `cron` run. And a run that cannot import what it
needs says so in one line before any letter is touched: nothing in doubt,
the letters due next time.
"""

from __future__ import annotations

import email
import email.policy
import json
import re
import shutil
import subprocess
from pathlib import Path

import dkim
import pytest
from packaging.requirements import Requirement

from support import vendorkit
from vykhukhol import returntag as tags
from vykhukhol.sender import journal

DEBIAN_PYTHON = Path("/usr/bin/python3")
DSN = Path(__file__).resolve().parents[1] / "data" / "bounces" / "flufl-dsn_01.txt"
DSN_ADDRESS = "userx@example.com"  # the address the genuine report names
DEAD = "dead@example.com"


def _normal(requirement: str) -> str:
    parsed = Requirement(requirement)
    marker = f"; {parsed.marker}" if parsed.marker else ""
    return f"{parsed.name.lower()}{parsed.specifier}{marker}"


def test_readmes_vendoring_commands_install_exactly_what_setup_cfg_declares():
    declared = sorted(_normal(r) for r in vendorkit.declared())
    commands = vendorkit.readme_vendoring_commands()
    assert len(commands) == 2, "the Apache page's step 1 has the command and the one for Python 3.10"
    assert sorted(_normal(r) for r in commands[0]) == declared
    # The 3.10 command: what the markers leave for 3.10, markers dropped.
    for_310 = sorted(_normal(str(Requirement(r)).split(";")[0]) for r in vendorkit.declared()
                     if Requirement(r).marker is None
                     or Requirement(r).marker.evaluate({"python_version": "3.10", "extra": ""}))
    assert sorted(_normal(r) for r in commands[1]) == for_310


# --- Debian's Python, only the vendored lib/ -------------------------------------

def _debian_python() -> str:
    if not DEBIAN_PYTHON.exists():
        pytest.skip("Debian's /usr/bin/python3 is not installed (apt-get install python3)")
    version = subprocess.run([str(DEBIAN_PYTHON), "-S", "-c",
                              "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.split()
    if tuple(map(int, version)) < (3, 10):
        pytest.skip(f"/usr/bin/python3 is {'.'.join(version)}; Vykhukhol needs 3.10")
    return str(DEBIAN_PYTHON)


@pytest.fixture(scope="module")
def host_lib(tmp_path_factory) -> Path:
    """lib/ as the Apache page's step 1 leaves it: Vykhukhol and exactly the declared dependencies."""
    lib = tmp_path_factory.mktemp("host") / "lib"
    vendorkit.vendor(tuple(vendorkit.declared()), lib)
    shutil.copytree(vendorkit.CHECKOUT / "lib" / "vykhukhol", lib / "vykhukhol",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return lib


def host(site, lib: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """`PYTHONPATH=lib python3 -S -m vykhukhol …` with Debian's Python, as on a host."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(lib), "LANG": "C.UTF-8",
           "HOME": str(lib.parent), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([_debian_python(), "-S", "-m", "vykhukhol", "--data", str(site.root),
                           *args], input=stdin, capture_output=True, env=env, timeout=120,
                          cwd=lib.parent)


def records_of(keygen_output: str) -> dict[bytes, bytes]:
    [line] = [x for x in keygen_output.splitlines() if "._domainkey." in x]
    name, rest = line.split(" IN TXT ")
    return {name.encode(): "".join(re.findall(r'"([^"]*)"', rest)).encode()}


def test_debian_python_sees_only_the_vendored_lib(site, host_lib):
    done = subprocess.run([_debian_python(), "-S", "-c",
                           "import sys, dkim, flufl.bounce, cryptography; "
                           "print(dkim.__file__, flufl.bounce.__file__, cryptography.__file__); "
                           "print(sys.path)"],
                          capture_output=True, text=True, env={"PYTHONPATH": str(host_lib)},
                          check=True)
    found, path = done.stdout.splitlines()
    assert all(p.startswith(str(host_lib)) for p in found.split()), found
    assert "site-packages" not in path and "dist-packages" not in path and ".venv" not in path


def test_a_host_with_the_vendored_lib_reads_the_public_suffix_list_for_dmarc_alignment(host_lib):
    """The list is package data of publicsuffixlist: vendored with it, read from lib/."""
    done = subprocess.run([_debian_python(), "-S", "-c",
                           "import publicsuffixlist; from vykhukhol.mail.alignment import aligned; "
                           "print(publicsuffixlist.__file__); "
                           "print(aligned('alice.github.io', 'bob.github.io'), "
                           "aligned('mail.example.org', 'news.example.org'))"],
                          capture_output=True, text=True, env={"PYTHONPATH": str(host_lib)},
                          check=True)
    found, answers = done.stdout.splitlines()
    assert found.startswith(str(host_lib)), found
    assert answers == "False True"


def test_a_host_with_the_vendored_lib_makes_two_factor_codes_and_draws_their_qr_code(host_lib):
    """pyotp and segno, vendored, make and check a code and draw the QR code
    for the admin's page and for the terminal (docs/using/admin.md#admin-two-factor)."""
    done = subprocess.run([_debian_python(), "-S", "-c",
                           "import pyotp, segno; from vykhukhol.settings import twofactor as t; "
                           "print(pyotp.__file__, segno.__file__); s = t.new_secret(); "
                           "print(t.code_matches(s, pyotp.TOTP(s).now()) is not None, "
                           "t.qr_svg(t.uri(s, 'a@example.org')).startswith('<svg'), "
                           "'\u2588' in t.qr_text(t.uri(s, 'a@example.org')))"],
                          capture_output=True, text=True, env={"PYTHONPATH": str(host_lib)},
                          check=True)
    found, answers = done.stdout.splitlines()
    assert all(p.startswith(str(host_lib)) for p in found.split()), found
    assert answers == "True True True"


def test_a_host_with_the_vendored_lib_signs_keygens_and_reads_a_genuine_dsn(site, host_lib):
    keygen = host(site, host_lib, "dkim", "keygen", "--domain", "example.org")
    assert keygen.returncode == 0, keygen.stderr
    records = records_of(keygen.stdout.decode())
    site.set(mail__from_email="news@example.org")
    site.service("course", letters=[("Lesson 1", "0s", "Hello {{ name }}. {{ unsubscribe_url }}"),
                                    ("Lesson 2", "30d", "Again.")])
    site.subscriber("course", DEAD, name="Иван")

    cron = host(site, host_lib, "cron")
    assert cron.returncode == 0, cron.stderr
    [path] = site.data.outbox.glob("*.eml")
    data = path.read_bytes()
    first, _, letter = data.partition(b"\r\n")
    assert letter.startswith(b"DKIM-Signature: ")
    assert dkim.verify(letter, dnsfunc=lambda name, timeout=5: records.get(name))

    sender = re.fullmatch(rb"Return-Path: <(\S+)>", first).group(1).decode()
    assert tags.split_address(sender, site.settings()["mail.verp_separator"])
    report = f"Delivered-To: {sender}\n".encode() + DSN.read_bytes().replace(
        DSN_ADDRESS.encode(), DEAD.encode())
    bounce = host(site, host_lib, "bounce", stdin=report)
    assert bounce.returncode == 0 and b"Traceback" not in bounce.stdout + bounce.stderr
    log = (site.data.log / "bounces.log").read_text(encoding="utf-8")
    assert DEAD in log and "ModuleNotFoundError" not in log
    [line] = log.splitlines()
    assert "kept" not in line.split("\t")[:3], line  # read as a bounce, not kept unread
    assert site.subscribers("course").get(DEAD) is None or \
        site.subscribers("course")[DEAD].failures >= 1


def _without(lib: Path, *parts: str) -> Path:
    """A copy of ``lib`` with the given top-level folders (and their
    distributions' metadata) left out: a host that vendored too little."""
    hidden = lib.parent / f"lib-without-{'-'.join(parts)}"
    if not hidden.exists():
        shutil.copytree(lib, hidden, symlinks=True,
                        ignore=lambda folder, names: [n for n in names if folder == str(lib) and (
                            n in parts or any(n.lower().startswith(p.lower() + "py-")
                                              for p in parts))])
    return hidden


@pytest.mark.parametrize("hidden", ["dkim", "jinja2"])
def test_a_run_that_cannot_import_what_it_needs_says_so_in_one_line_and_touches_no_letter(
        site, host_lib, hidden):
    """dkimpy (signing on) or Jinja2 (every letter) left out of lib/."""
    assert host(site, host_lib, "dkim", "keygen", "--domain", "example.org").returncode == 0
    site.set(mail__from_email="news@example.org")
    site.service("course", letters=[("Lesson 1", "0s", "Hello. {{ unsubscribe_url }}"),
                                    ("Lesson 2", "30d", "Again.")])
    site.subscriber("course", DEAD)
    lacking = _without(host_lib, hidden)

    cron = host(site, lacking, "cron")
    output = (cron.stdout + cron.stderr).decode()
    assert "Traceback" not in output, output
    assert not list(site.data.outbox.glob("*.eml"))
    run_log = site.log()
    said = [line for line in run_log.splitlines() if "cannot import" in line]
    assert len(said) == 1 and f"the module {hidden} " in said[0], run_log + output
    assert "temporary delivery failure" in run_log.splitlines()[-1], run_log
    assert "in doubt" not in run_log and "in doubt" not in output
    for path in site.data.state.glob("*.journal"):
        assert not [r for r in journal.Journal(path).records() if r.outcome == journal.IN_DOUBT]
    assert site.subscribers("course")[DEAD].sent == 0

    cron = host(site, host_lib, "cron")  # vendored in full: the letter leaves now, once
    assert cron.returncode == 0, cron.stderr
    [path] = site.data.outbox.glob("*.eml")
    assert email.message_from_bytes(path.read_bytes(), policy=email.policy.default)["To"] \
        .addresses[0].addr_spec == DEAD
    assert site.subscribers("course")[DEAD].sent == 1


def test_a_bounce_read_without_the_bounce_detectors_is_kept_and_the_log_says_what_is_missing(
        site, host_lib):
    """flufl.bounce left out of lib/: the message is kept for the admin, exit 0
    (the mail server must not bounce the bounce), one plain line in bounces.log."""
    site.set(mail__from_email="news@example.org")
    site.service("course", letters=[("Lesson 1", "0s", "Hello."), ("Lesson 2", "30d", "Again.")])
    site.subscriber("course", DEAD)
    assert host(site, host_lib, "cron").returncode == 0
    [path] = site.data.outbox.glob("*.eml")
    sender = re.fullmatch(rb"Return-Path: <(\S+)>", path.read_bytes().partition(b"\r\n")[0]).group(1)
    report = b"Delivered-To: " + sender + b"\n" + DSN.read_bytes().replace(
        DSN_ADDRESS.encode(), DEAD.encode())

    bounce = host(site, _without(host_lib, "flufl"), "bounce", stdin=report)
    assert bounce.returncode == 0 and b"Traceback" not in bounce.stdout + bounce.stderr
    [line] = (site.data.log / "bounces.log").read_text(encoding="utf-8").splitlines()
    assert "kept" in line and "cannot import the module flufl" in line, line
    assert "ModuleNotFoundError" not in line
    assert list((site.data.root / "bounces" / "kept").iterdir())
    assert site.subscribers("course")[DEAD].failures == 0  # nothing acted on


def test_the_doctor_asks_the_dns_with_the_vendored_lib_and_says_so_when_dnspython_is_missing(
        site, host_lib):
    """`vykhukhol doctor` on Debian's Python with only lib/: dnspython is vendored
    because setup.cfg declares it; a lib/ without it gives one line, no traceback."""
    from support.dnskit import DnsServer

    site.set(mail__from_email="news@example.org")
    with DnsServer({("example.org", "TXT"): ['"v=spf1 -all"'],
                    ("example.org", "MX"): ["10 mx.example.org."]}) as server:
        site.set(dns__resolver=server.address)
        done = host(site, host_lib, "doctor", "--json")
        lacking = host(site, _without(host_lib, "dns"), "doctor")
    assert done.returncode == 1, done.stderr  # DKIM and DMARC are missing: wrong
    verdicts = {f["check"]: f["verdict"] for f in json.loads(done.stdout)}
    assert verdicts["SPF"] == "ok" and verdicts["MX"] == "ok" and verdicts["DMARC"] == "wrong"
    assert lacking.returncode == 1 and b"Traceback" not in lacking.stderr
    assert lacking.stderr.decode().count("\n") == 1
    assert "cannot import the module dns" in lacking.stderr.decode()

"""The idle cron tick (lib/vykhukhol/sender/idle.py, docs/design/run.md#idle-proof): a cron hit with
nothing due is answered from data/state/idle without reading the data, and
anything that could make something due sends the next tick the full way.

Real folders, real sender runs, the real CGI cron script as a subprocess.
``idle.RACY`` is set to 0 where a test writes files and proves at once (on a
host a file changed in the last two seconds is never trusted).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from support.webtools import assert_security_headers
from vykhukhol import newsletters, sender
from vykhukhol import services as svc
from vykhukhol import settings as settings_mod
from vykhukhol.datadir import locate
from vykhukhol.members import membership
from vykhukhol.sender import idle, rotation
from vykhukhol.watch import selfblock
from vykhukhol.web.http import Request

FAR = "3650d"
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def no_racy_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(idle, "RACY", 0.0)


def idle_site(site, services: int = 3):
    """``services`` enabled services whose one letter is ten years away, each
    with a few subscribers who are waiting for it; one full run, which proves."""
    for i in range(services):
        site.service(f"list{i}", letters=[("Lesson 1", FAR, "Hello.\n")])
        for j in range(3):
            site.subscriber(f"list{i}", f"user{j}@example.org")
    report = sender.run(site.data, site.settings())
    assert site.sent_counts(report.text()) == {} and report.outcome.value == "done"
    assert (site.data.state / "idle").exists()
    return site


def full_run_would_be_taken(site) -> bool:
    return idle.tick(str(site.data.root)) is None


# --- nothing due: only the proof ---------------------------------------------------

def test_an_idle_tick_answers_from_the_proof_and_passes_the_turn(site) -> None:
    idle_site(site)
    served_before = rotation.served_times(site.data)
    answer = idle.tick(str(site.data.root))
    assert answer is not None and "nothing due before" in answer
    served_after = rotation.served_times(site.data)
    turned = [name for name in served_after if served_after[name] != served_before.get(name)]
    assert len(turned) == 1  # exactly what an idle full run does: one service's turn passes
    assert "run ended after" in site.log().splitlines()[-1]


AUDIT = r"""
import json, runpy, sys
opened = []
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes)):
        opened.append(str(args[0]))
    elif event in ("os.listdir", "os.scandir"):
        opened.append("listdir:" + str(args[0]))
sys.addaudithook(hook)
sys.argv = [sys.argv[1]]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    sys.stderr.write("\nOPENED " + json.dumps(opened) + "\n")
"""


def run_cron_audited(cgi_dir: Path, script: Path, data_root: Path) -> tuple[str, list[str]]:
    """The CGI cron script as a CGI process, every file it opens recorded."""
    env = {"PATH": os.environ["PATH"], "REQUEST_METHOD": "GET", "REMOTE_ADDR": "127.0.0.1",
           "GATEWAY_INTERFACE": "CGI/1.1", "SCRIPT_FILENAME": str(script), "PYTHONPATH": "",
           "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
           "VYKHUKHOL_DATA": str(data_root)}
    done = subprocess.run([sys.executable, "-c", AUDIT, str(script)], env=env,
                          capture_output=True, cwd=cgi_dir, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    opened = json.loads(done.stderr.decode().rsplit("OPENED ", 1)[1])
    return done.stdout.decode(), opened


def test_an_idle_cgi_tick_opens_no_data_file_but_its_proof(site, tmp_path: Path) -> None:
    """Checked with an audit hook, not chmod 000: the tests may run as root."""
    idle_site(site)
    checkout = Path(__file__).resolve().parents[2]
    answer, opened = run_cron_audited(checkout / "cgi", checkout / "cgi" / "cron.py",
                                      site.data.root)
    assert "nothing due before" in answer
    root = str(site.data.root)
    data_files = {p for p in opened if p.startswith(root) and not p.startswith("listdir:")}
    allowed = {os.path.join(root, rel) for rel in
               ("state/idle", "state/served", "state/served.lock", "log/run.log")}
    assert data_files <= allowed, data_files - allowed
    assert os.path.join(root, "state/idle") in data_files
    for path in opened:  # no subscriber file, letter or settings.ini
        assert not path.endswith(("subscribers.txt", ".txt", "settings.ini", "service.ini")), path


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_idle_tick_runs_with_subscriber_files_unreadable(site) -> None:
    idle_site(site)
    for service in svc.load_services(site.data):
        os.chmod(service.subscribers_path, 0)
    try:
        assert idle.tick(str(site.data.root)) is not None
    finally:
        for service in svc.load_services(site.data):
            os.chmod(service.subscribers_path, 0o600)


def test_the_fast_data_root_agrees_with_locate(tmp_path: Path, monkeypatch) -> None:
    scripts = tmp_path / "cgi"
    scripts.mkdir()
    monkeypatch.delenv("VYKHUKHOL_DATA", raising=False)
    assert idle.data_root(str(scripts)) == str(locate(None, scripts))
    (scripts / "vykhukhol.path").write_text("../data\n", encoding="utf-8")
    assert idle.data_root(str(scripts)) == str(locate(None, scripts)) == str(tmp_path / "data")
    monkeypatch.setenv("VYKHUKHOL_DATA", str(tmp_path / "elsewhere"))
    assert idle.data_root(str(scripts)) == str(locate(None, scripts))


# --- something due: the full way ---------------------------------------------------

def test_a_tick_past_the_proofs_time_takes_the_full_way(site) -> None:
    idle_site(site)
    proof = idle.read_proof(str(site.data.root))
    until = float(proof.values["until"])
    assert idle.tick(str(site.data.root), moment=until - 1) is not None
    assert idle.tick(str(site.data.root), moment=until) is None


def test_a_subscriber_due_now_is_sent_by_the_next_tick(site) -> None:
    idle_site(site)
    site.service("fresh", letters=[("Welcome", "0s", "Hi.\n")])
    site.subscriber("fresh", "new@example.org")
    assert full_run_would_be_taken(site)
    assert site.sent_counts(sender.run(site.data, site.settings()).text()) == {"fresh": 1}


def edit_in_place(path: Path, text: str, keep_times: bool = False) -> None:
    """What an FTP client does: the same file rewritten (same inode)."""
    info = path.stat()
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)
    if keep_times:
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def _ftp_subscriber(site) -> None:
    path = svc.find_service(site.data, "list1").subscribers_path
    edit_in_place(path, f"ftp@example.org\t\tactive\t{T0:%Y-%m-%dT%H:%M:%SZ}\t-\t0\t-\t0\t-\t0\t-\n")


def _ftp_subscriber_same_size_and_mtime(site) -> None:
    path = svc.find_service(site.data, "list1").subscribers_path
    info = path.stat()
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("user0@", "userX@"), encoding="utf-8")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert path.stat().st_size == info.st_size


def _ftp_letter(site) -> None:
    service = svc.find_service(site.data, "list2")
    letter = sorted(service.letters_dir.iterdir())[0]
    letter.write_text(letter.read_text(encoding="utf-8").replace(FAR, "0s"), encoding="utf-8")


def _ftp_settings(site) -> None:
    edit_in_place(site.data.settings, "\n# edited over FTP\n", keep_times=True)


def _new_letter_file(site) -> None:
    service = svc.find_service(site.data, "list0")
    (service.letters_dir / "002.txt").write_text("Subject: Two\nDelay: 0s\n\nHi.\n")


def _newsletter_job(site) -> None:
    newsletters.create(site.data, ["list0"], "News", "Hello.\n",
                       start=datetime.now(timezone.utc) + timedelta(days=1))


def _mode_debug(site) -> None:
    site.ok("mode", "debug")


def _admin_edit(site) -> None:
    svc.edit_service(site.data, "list0", {"send_window": "* 9-17 * * *"})


def _admin_letter(site) -> None:
    svc.add_letter(svc.find_service(site.data, "list0"), "Extra", "0s", "Hi.\n")


def _subscribe(site) -> None:
    membership.subscribe(site.data, site.settings(), "list0", "someone@example.org",
                         confirmed=True, notify=False)


def _new_service(site) -> None:
    site.service("later", letters=[("Lesson 1", FAR, "Hello.\n")])


def _lock_held(site) -> None:
    os.rename(site.data.db("main") / "db.free", site.data.db("main") / "db.busy")


def _journal_left(site) -> None:
    (site.data.state / "db-main.journal").write_text("a line a killed run left\n")


def _blocked(site) -> None:
    selfblock.set_block(site.data, "a run died", "40s")


def _setting_via_cli(site) -> None:
    site.ok("settings", "set", "reminder_period", "2d")


CHANGES = [_ftp_subscriber, _ftp_subscriber_same_size_and_mtime, _ftp_letter, _ftp_settings,
           _new_letter_file, _newsletter_job, _mode_debug, _admin_edit, _admin_letter,
           _subscribe, _new_service, _lock_held, _journal_left, _blocked, _setting_via_cli]


@pytest.mark.parametrize("change", CHANGES, ids=[c.__name__.strip("_") for c in CHANGES])
def test_a_change_that_may_make_something_due_voids_the_proof(site, change) -> None:
    idle_site(site)
    assert not full_run_would_be_taken(site)
    change(site)
    assert full_run_would_be_taken(site)


def test_a_damaged_proof_costs_a_full_run_only(site) -> None:
    idle_site(site)
    path = site.data.state / "idle"
    text = path.read_text(encoding="utf-8")
    for damaged in (text[: len(text) // 2], "", text.replace("until\t", "until\tx"),
                    text.replace("version\t1", "version\t9")):
        path.write_text(damaged, encoding="utf-8")
        assert full_run_would_be_taken(site)


def caller(environ: dict):
    """The request's address as the web gives it to the tick."""
    return Request(environ).client


def test_a_caller_cron_allow_refuses_is_not_answered_by_the_tick(site) -> None:
    site.set(cron_allow="10.0.0.0/8")
    idle_site(site)
    assert idle.tick(str(site.data.root), caller({"REMOTE_ADDR": "192.0.2.1"})) is None
    assert idle.tick(str(site.data.root), caller({"REMOTE_ADDR": "10.1.2.3"})) is not None


def test_behind_a_trusted_proxy_cron_allow_applies_to_the_forwarded_client(site) -> None:
    site.set(cron_allow="127.0.0.1 10.0.0.0/8", trusted_proxies="127.0.0.1")
    idle_site(site)
    root = str(site.data.root)
    stranger = {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "192.0.2.1"}
    assert idle.tick(root, caller(stranger)) is None  # the proxy is allowed, the stranger behind it not
    assert idle.tick(root, caller({"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "10.1.2.3"}))


def test_a_bounce_mailbox_is_read_by_a_full_run_at_least_every_few_minutes(site) -> None:
    site.set(mail__bounce_mailbox="imaps://bounces:pw@127.0.0.1:1/INBOX")
    idle_site(site)
    proof = idle.read_proof(str(site.data.root))
    assert float(proof.values["until"]) - float(proof.values["built"]) <= idle.MAILBOX_EVERY


def test_the_full_cgi_cron_writes_the_proof_and_the_next_tick_uses_it(install) -> None:  # noqa: F811
    script = install.cron_script()
    for i in range(2):
        svc.add_service(install.data, f"far{i}", "main", {"title": "Far"})
        svc.add_letter(svc.find_service(install.data, f"far{i}"), "L", FAR, "Hi.\n")
        svc.edit_service(install.data, f"far{i}", {"enabled": "yes"})
    svc.edit_service(install.data, "news", {"enabled": "no"})
    time.sleep(idle.RACY_SECONDS + 0.2)  # files this fresh are not trusted (the process's own RACY)
    first = install.run(script)
    assert first.status == 200 and "run started" in first.body
    assert (install.data.state / "idle").exists()
    second = install.run(script)
    assert second.status == 200 and "nothing due before" in second.body
    assert_security_headers(second)  # the same headers as the full way's answer
    svc.edit_service(install.data, "news", {"enabled": "yes"})  # the admin turns it on
    third = install.run(script)
    assert "run started" in third.body


# --- fairness: the same services served in the same order ------------------------

def fairness_site(site):
    """Two DBs, five services; subscribers whose letters fall due over the
    simulated hours, so that at times several services have work at once."""
    site.set(serial_per_run=2)
    for i, db in enumerate(["main", "main", "other", "other", "main"]):
        site.service(f"s{i}", db=db, letters=[("One", f"{20 + 7 * i}m", "Hi.\n"),
                                              ("Two", f"{55 + 11 * i}m", "Hi.\n")])
        path = svc.find_service(site.data, f"s{i}").subscribers_path
        for j in range(4):
            confirmed = T0 - timedelta(minutes=3 * j * (i + 1))
            stamp = f"{confirmed:%Y-%m-%dT%H:%M:%SZ}"
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(f"u{j}@s{i}.example.org\t\tactive\t{stamp}\t{stamp}\t0\t-\t0\t-\t0\t-\n")
    return site


def simulate(site, minutes: int, fast: bool) -> tuple[list[tuple[int, tuple[str, ...]]], int]:
    sequence, quick = [], 0
    settings = settings_mod.load(site.data.settings)
    for minute in range(minutes):
        moment = T0 + timedelta(minutes=minute)
        if fast and idle.tick(str(site.data.root), moment=moment.timestamp()) is not None:
            quick += 1
            continue
        report = sender.run(site.data, settings, now=lambda moment=moment: moment)
        if report.sent:
            sequence.append((minute, tuple(sorted(report.sent))))
        if not fast:
            idle.forget(site.data)
    return sequence, quick


def test_round_robin_serves_the_same_services_in_the_same_order_with_the_fast_path(
        site, tmp_path: Path) -> None:
    import shutil

    plain = fairness_site(site)
    shutil.copytree(plain.root, tmp_path / "copy")
    quick = type(site)(tmp_path / "copy", site.cgi_dir)
    without, _ = simulate(plain, 180, fast=False)
    with_fast, ticks = simulate(quick, 180, fast=True)
    assert with_fast == without
    assert ticks > 60  # most minutes were idle ticks
    assert {name for _, names in without for name in names} == {f"s{i}" for i in range(5)}
    assert any(len(names) > 1 for _, names in without) or len(without) > 10

"""Alerts to the admin (docs/using/alerts.md#alerts, docs/design/run.md#run-steps): each fires
when it should, is mailed to admin_email at most once an hour per subject, and
is written to the run log on every run."""

from __future__ import annotations

import os
import re
import socket
import time
from datetime import timedelta

import pytest

from vykhukhol import files, newsletters
from vykhukhol import services as svc
from vykhukhol.errors import StorageError
from vykhukhol.services import due_summary
from vykhukhol.timeutil import now

ADMIN = "admin@example.org"
HOUR = 3600
ONE_LETTER = [("Letter one", "0s", "Hello {{ name }}.")]


# --- helpers ------------------------------------------------------------------



def alerts_mailed(site) -> list[str]:
    """Subjects of the letters to the admin, oldest first."""
    return [m["Subject"] for m in site.outbox() if m["To"].addresses[0].addr_spec == ADMIN]


def alert_body(site, subject: str) -> str:
    [letter] = [m for m in site.outbox() if m["Subject"] == subject]
    return letter.get_body(("plain",)).get_content()


def alerts_logged(site, subject: str) -> int:
    return sum(1 for line in site.log().splitlines()
               if line.split("\t")[2:3] == ["alert"] and line.split("\t")[3].startswith(subject))


def to_subscribers(site) -> list:
    return [m for m in site.outbox() if m["To"].addresses[0].addr_spec != ADMIN]


def hold(lock: files.RenameLock, content: str = "another-run", age: float = 0.0) -> None:
    """Make ``lock`` busy as another run would: renamed to busy, a lease in it,
    started ``age`` seconds ago. Without a pid and a host in it, the holder
    counts as alive (a run on another machine)."""
    os.rename(lock.free, lock.busy)
    lock.busy.write_text(content, encoding="utf-8")
    if age:
        then = time.time() - age
        os.utime(lock.busy, (then, then))


def due_service(site, name: str = "news", db: str = "main") -> None:
    site.service(name, db=db, letters=ONE_LETTER)
    site.subscriber(name, f"reader@{name}.example.org")


# --- Script is off -----------------------------------------------------------------

def test_debug_mode_sends_nothing_and_alerts_script_is_off_once_an_hour(fresh_site):
    """In debug mode nothing is sent; "Script is off" is mailed once within an hour, logged on every run."""
    site = fresh_site
    due_service(site)

    report = site.run_at()
    assert to_subscribers(site) == []
    assert alerts_mailed(site) == ["Script is off"]
    assert "off" in report.splitlines()[-1]
    assert "режиме отладки" in alert_body(site, "Script is off")

    site.run_at()
    assert alerts_mailed(site) == ["Script is off"]
    assert alerts_logged(site, "Script is off") == 2
    assert site.subscribers("news")["reader@news.example.org"].sent == 0


def test_script_is_off_is_mailed_again_after_an_hour(fresh_site):
    """The once-an-hour throttle lets the same alert out again after an hour."""
    site = fresh_site
    start = now()
    site.run_at(start)
    site.run_at(start + timedelta(minutes=59))
    assert alerts_mailed(site) == ["Script is off"]
    site.run_at(start + timedelta(minutes=61))
    assert alerts_mailed(site) == ["Script is off", "Script is off"]
    assert alerts_logged(site, "Script is off") == 3


def test_switching_to_debug_mode_with_the_cli_turns_the_script_off(site):
    """`vykhukhol mode debug` stops sending; `mode working` resumes it."""
    due_service(site)
    site.ok("mode", "debug")
    site.run_at()
    assert alerts_mailed(site) == ["Script is off"]
    assert to_subscribers(site) == []

    site.ok("mode", "working")
    site.run_at()
    assert len(to_subscribers(site)) == 1
    assert alerts_mailed(site) == ["Script is off"]


def test_alerts_of_different_subjects_are_each_mailed_within_the_hour(fresh_site):
    """The throttle is per subject: another alert in the same hour is still mailed."""
    site = fresh_site
    site.service("news", letters=ONE_LETTER, enabled=False)
    site.run_at()
    site.ok("mode", "working")
    site.run_at()
    assert alerts_mailed(site) == ["Script is off", "all dispatchs is off"]


def test_alerts_are_only_logged_when_there_is_no_admin_email(fresh_site):
    """With admin_email empty an alert is logged and nothing is mailed."""
    site = fresh_site
    site.set(admin_email="")
    site.run_at()
    assert site.outbox() == []
    assert alerts_logged(site, "Script is off") == 1


# --- all dispatchs is off ------------------------------------------------------------

def test_no_enabled_service_alerts_all_dispatchs_is_off_once_an_hour(site):
    """With every service disabled the serial part ends with "all dispatchs is off", mailed once an hour, logged every run."""
    site.service("news", letters=ONE_LETTER, enabled=False)
    site.subscriber("news", "reader@example.org")

    site.run_at()
    site.run_at()
    assert alerts_mailed(site) == ["all dispatchs is off"]
    assert alerts_logged(site, "all dispatchs is off") == 2
    assert to_subscribers(site) == []
    assert "выключены" in alert_body(site, "all dispatchs is off")


def test_a_site_without_any_service_alerts_all_dispatchs_is_off(site):
    """No service at all counts as no service enabled."""
    site.run_at()
    assert alerts_mailed(site) == ["all dispatchs is off"]


def test_one_enabled_service_is_enough_to_stop_the_all_off_alert(site):
    """"all dispatchs is off" is not raised while any service is enabled."""
    site.service("news", letters=ONE_LETTER, enabled=False)
    site.service("other", db="other", letters=ONE_LETTER)
    site.run_at()
    assert alerts_mailed(site) == []
    assert alerts_logged(site, "all dispatchs is off") == 0


# --- not can launch the sender ---------------------------------------------------------

def test_a_db_held_by_a_live_run_is_left_alone_with_not_can_launch_the_sender(site):
    """A busy DB lock younger than time_limit: nothing is sent on that DB, "not can launch the sender" is mailed once an hour."""
    due_service(site)
    lock = svc.db_lock(site.data, "main")
    hold(lock)

    report = site.run_at()
    assert to_subscribers(site) == []
    assert alerts_mailed(site) == ["not can launch the sender"]
    assert "busy" in report.splitlines()[-1]
    assert "НЕСКОЛЬКО кронов" in alert_body(site, "not can launch the sender")
    assert lock.busy.read_text() == "another-run"  # the other run's lock is not touched

    site.run_at()
    assert alerts_mailed(site) == ["not can launch the sender"]
    assert alerts_logged(site, "not can launch the sender") == 2
    assert site.subscribers("news")["reader@news.example.org"].sent == 0
    assert not (site.data.state / "blocked").exists()

    os.rename(lock.busy, lock.free)  # the other run ends
    site.run_at()
    assert len(to_subscribers(site)) == 1
    assert lock.free.exists() and not lock.busy.exists()


def test_a_busy_lock_naming_this_live_process_counts_as_a_live_run(site):
    """A lease with a live pid of this host is another run at work, not a dead one."""
    due_service(site)
    lock = svc.db_lock(site.data, "main")
    hold(lock, f"other\t{os.getpid()}\t{socket.gethostname()}")

    site.run_at()
    assert alerts_mailed(site) == ["not can launch the sender"]
    assert to_subscribers(site) == []
    assert not (site.data.state / "blocked").exists()


def test_a_db_whose_lock_cannot_be_taken_does_not_starve_the_other_dbs(site, monkeypatch):
    """A DB whose rename fails (permissions) alerts "not can launch the sender" but services of other DBs still get their turn."""
    real_acquire = files.RenameLock.acquire

    def acquire(self, lease):
        if self.folder.name == "broken":
            raise StorageError(f"cannot rename {self.free.name}: Permission denied")
        return real_acquire(self, lease)

    monkeypatch.setattr(files.RenameLock, "acquire", acquire)
    due_service(site, "alpha", db="broken")   # first by name, never served
    due_service(site, "bravo", db="fine")
    start = now()

    for k in range(3):
        site.run_at(start + timedelta(minutes=k))
    assert alerts_mailed(site) == ["not can launch the sender"]
    assert "Permission denied" in alert_body(site, "not can launch the sender")
    assert [m["To"].addresses[0].addr_spec for m in to_subscribers(site)] == [
        "reader@bravo.example.org"]


def test_a_newsletter_lock_held_by_a_live_run_stops_the_newsletters_only(site):
    """A busy newsletters lock: no newsletter letter, "not can launch the sender", series letters still go."""
    due_service(site)
    job = newsletters.create(site.data, ["news"], "Big news", "text")
    hold(newsletters.lock(site.data))

    site.run_at()
    assert alerts_mailed(site) == ["not can launch the sender"]
    assert [m["Subject"] for m in to_subscribers(site)] == ["Letter one"]
    assert (site.data.newsletters / f"{job}.job").exists()


# --- script is down by hoster ----------------------------------------------------------

def test_a_stale_db_lock_blocks_the_sender_until_the_mode_is_toggled(site):
    """A busy lock older than time_limit: "script is down by hoster", nothing sent, and blocked on later runs until debug → working."""
    due_service(site)
    lock = svc.db_lock(site.data, "main")
    hold(lock, age=120)  # time_limit is 30s

    report = site.run_at()
    assert to_subscribers(site) == []
    assert alerts_mailed(site) == ["script is down by hoster"]
    assert "blocked" in report.splitlines()[-1]
    body = alert_body(site, "script is down by hoster")
    # Durations in the letter's language, in words: «30 с», «2 мин».
    assert "30 с" in body and "debug" in body and "working" in body
    assert re.search(r"шёл уже \d+ мин", body)  # how long the dead run had been going

    os.rename(lock.busy, lock.free)  # even a freed lock does not unblock the sender
    site.run_at()
    site.run_at()
    assert to_subscribers(site) == []
    assert alerts_mailed(site) == ["script is down by hoster"]
    assert alerts_logged(site, "script is down by hoster") == 3

    site.ok("mode", "debug")
    site.ok("mode", "working")
    site.run_at()
    assert len(to_subscribers(site)) == 1
    assert site.subscribers("news")["reader@news.example.org"].sent == 1


def test_switching_the_mode_clears_a_stale_lock_as_well_as_the_block(site):
    """debug → working frees the dead run's lock, so the next run sends."""
    due_service(site)
    lock = svc.db_lock(site.data, "main")
    hold(lock, age=120)
    site.run_at()
    assert lock.busy.exists()

    site.ok("mode", "debug")
    out = site.ok("mode", "working")
    assert "self-block" in out and "stale lock" in out
    assert lock.free.exists() and not lock.busy.exists()
    site.run_at()
    assert len(to_subscribers(site)) == 1


def test_a_stale_newsletter_lock_blocks_the_whole_sender(site):
    """A dead run on the newsletters lock blocks series letters too, with "script is down by hoster"."""
    due_service(site)
    newsletters.create(site.data, ["news"], "Big news", "text")
    hold(newsletters.lock(site.data), age=300)

    site.run_at()
    site.run_at()
    assert to_subscribers(site) == []
    assert alerts_mailed(site) == ["script is down by hoster"]
    assert (site.data.state / "blocked").exists()


# --- not can terminate sender -----------------------------------------------------------

@pytest.fixture
def release_fails(monkeypatch):
    """The final rename back to free fails (hard to cause for real as root)."""
    def release(self):
        raise StorageError(f"cannot rename {self.busy.name} back: Permission denied")
    monkeypatch.setattr(files.RenameLock, "release", release)


def test_a_failed_release_alerts_not_can_terminate_sender_once_an_hour(site, release_fails):
    """When the DB lock cannot be renamed back: "not can terminate sender", mailed once an hour, logged every time; progress is kept."""
    due_service(site)
    site.subscriber("news", "second@example.org", ago=60)
    lock = svc.db_lock(site.data, "main")

    report = site.run_at()
    assert alerts_mailed(site) == ["not can terminate sender"]
    assert "busy" in report.splitlines()[-1]
    assert "Permission denied" in alert_body(site, "not can terminate sender")
    assert {s.sent for s in site.subscribers("news").values()} == {1}
    assert lock.busy.exists()

    os.rename(lock.busy, lock.free)  # the admin repairs the folder; the fault is still there
    site.subscriber("news", "third@example.org", ago=60)
    due_summary.forget_due(site.data, "news")  # the fixture's line does not lower the sender's summary
    site.run_at()
    assert alerts_mailed(site) == ["not can terminate sender"]
    assert alerts_logged(site, "not can terminate sender") == 2
    assert len(to_subscribers(site)) == 3


def test_a_failed_newsletter_release_stops_the_run(site, release_fails):
    """The newsletters lock cannot be released: alert, and the run stops before the series."""
    due_service(site)
    newsletters.create(site.data, ["news"], "Big news", "text")

    site.run_at()
    assert "not can terminate sender" in alerts_mailed(site)
    assert [m["Subject"] for m in to_subscribers(site)] == ["Big news"]
    assert site.subscribers("news")["reader@news.example.org"].sent == 0


def test_a_lock_left_busy_by_a_failed_release_is_a_live_run_at_first(site, release_fails):
    """The next run right after a failed release finds the lock busy and young: "not can launch the sender"."""
    due_service(site)
    site.run_at()
    site.run_at()
    assert alerts_mailed(site) == ["not can terminate sender", "not can launch the sender"]

"""The sender's serial cycle (docs/design/run.md#run-steps, steps 3-5): quotas, the round-robin queue
across DBs, same-DB fill, send windows, series delays, reminders, clean-up,
sending limits and the headers every letter carries.

Runs are in-process. Where a test needs time to pass (a delay, a reminder
period, a queue ordered by when services were served, a window minute) it
runs the sender at a chosen moment with ``sender.run(..., now=…)``; the
subscribers are backdated from the real clock, so a later moment only makes
more of them due.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from vykhukhol import services as svc
from vykhukhol import tokens
from vykhukhol.mail import texts
from vykhukhol.timeutil import now

ADMIN = "admin@example.org"
HOUR = 3600
DAY = 86400
ONE_LETTER = [("Letter one for {{ name }}", "0s", "Hello {{ name }}, this is letter one.")]


# --- helpers ------------------------------------------------------------------





def lease_of(report: str) -> str:
    first = report.splitlines()[0]
    assert first.startswith("run "), report
    return first.split()[1]


def letters(site, to: str | None = None) -> list:
    """Letters in the outbox that are not alerts or reports to the admin."""
    found = [m for m in site.outbox() if m["To"].addresses[0].addr_spec != ADMIN]
    if to is not None:
        found = [m for m in found if m["To"].addresses[0].addr_spec == to]
    return found


def recipients(site) -> list[str]:
    return [m["To"].addresses[0].addr_spec for m in letters(site)]


def minutes(base: datetime, count: int) -> datetime:
    return base + timedelta(minutes=count)


# --- quotas ---------------------------------------------------------------------

def test_serial_per_run_sends_exactly_the_quota_on_each_run_until_none_are_left(site):
    """serial_per_run=3 with 8 due subscribers gives 3, 3 and 2 letters over three runs, longest waiting first."""
    site.set(serial_per_run=3)
    site.service("news", letters=ONE_LETTER)
    for i in range(8):
        site.subscriber("news", f"u{i}@example.org", ago=HOUR * (10 - i))  # u0 waits longest

    got = []
    for _ in range(4):
        before = len(letters(site))
        report = site.run_at()
        got.append(len(letters(site)) - before)
        assert site.sent_counts(report).get("news", 0) == got[-1]
    assert got == [3, 3, 2, 0]
    assert recipients(site) == [f"u{i}@example.org" for i in range(8)]


def test_reminders_count_against_serial_per_run(site):
    """Series letters and reminders share one serial_per_run quota."""
    site.set(serial_per_run=3)
    site.service("news", letters=ONE_LETTER)
    site.subscriber("news", "a@example.org", ago=HOUR)
    site.subscriber("news", "b@example.org", ago=HOUR)
    site.subscriber("news", "c@example.org", state="new", ago=3 * DAY + HOUR)
    site.subscriber("news", "d@example.org", state="new", ago=3 * DAY + HOUR)

    site.run_at()
    assert len(letters(site)) == 3
    site.run_at()
    assert sorted(recipients(site)) == ["a@example.org", "b@example.org", "c@example.org",
                                        "d@example.org"]


# --- step 3: the round-robin queue ---------------------------------------------------

def test_services_in_different_dbs_take_turns_longest_ago_served_first(site):
    """Round robin: longest ago served first, a new service first, a disabled one leaves, a quick off/on keeps its place."""
    site.set(serial_per_run=1)
    for name, db in (("alpha", "d1"), ("bravo", "d2"), ("charlie", "d3")):
        site.service(name, db=db, letters=ONE_LETTER)
        for i in range(5):
            site.subscriber(name, f"{name}{i}@example.org", ago=HOUR + i)
    base = now()
    served = []

    def turn(k: int) -> None:
        report = site.run_at(minutes(base, k))
        [(name, count)] = site.sent_counts(report).items()
        assert count == 1
        served.append(name)

    turn(1)
    turn(2)
    turn(3)
    assert served == ["alpha", "bravo", "charlie"]

    site.service("newbie", db="d4", letters=ONE_LETTER)  # never served: front of the queue
    for i in range(5):
        site.subscriber("newbie", f"newbie{i}@example.org", ago=HOUR + i)
    turn(4)
    turn(5)
    assert served[3:] == ["newbie", "alpha"]

    site.ok("service", "disable", "bravo")  # switched off and straight back on
    site.ok("service", "enable", "bravo")
    turn(6)
    assert served[5] == "bravo"

    site.ok("service", "disable", "charlie")  # next in line, but off: it leaves the queue
    turn(7)
    turn(8)
    assert served[6:] == ["newbie", "alpha"]

    site.ok("service", "enable", "charlie")  # back after a pause: served longest ago, so first
    turn(9)
    assert served[8] == "charlie"


def test_a_service_with_nothing_due_still_takes_its_turn(site):
    """The chosen service counts as served even when nothing of it was due."""
    site.set(serial_per_run=1)
    site.service("alpha", db="d1", letters=ONE_LETTER)  # no subscribers
    site.service("bravo", db="d2", letters=ONE_LETTER)
    site.subscriber("bravo", "b@example.org")
    base = now()

    assert site.sent_counts(site.run_at(minutes(base, 1))) == {}
    assert site.sent_counts(site.run_at(minutes(base, 2))) == {"bravo": 1}


# --- step 4: same-DB fill ---------------------------------------------------------

def test_a_run_fills_its_quota_from_other_services_of_the_same_db_only(site):
    """When the chosen service has fewer due letters than the quota, enabled services of its DB fill the run; other DBs wait."""
    site.set(serial_per_run=4)
    site.service("alpha", db="shared", letters=ONE_LETTER)    # chosen first (never served, by name)
    site.service("bravo", db="shared", letters=ONE_LETTER)
    site.service("charlie", db="shared", letters=ONE_LETTER, enabled=False)
    site.service("delta", db="other", letters=ONE_LETTER)
    for i in range(2):
        site.subscriber("alpha", f"alpha{i}@example.org")
    for name in ("bravo", "charlie", "delta"):
        for i in range(5):
            site.subscriber(name, f"{name}{i}@example.org")
    base = now()

    assert site.sent_counts(site.run_at(minutes(base, 1))) == {"alpha": 2, "bravo": 2}
    assert all(s.sent == 0 for s in site.subscribers("delta").values())
    assert all(s.sent == 0 for s in site.subscribers("charlie").values())

    # bravo was worked on, so it counts as served: the other DB is next.
    assert site.sent_counts(site.run_at(minutes(base, 2))) == {"delta": 4}
    assert site.sent_counts(site.run_at(minutes(base, 3))) == {"bravo": 3}


# --- step 4: send windows -------------------------------------------------------------

def test_a_service_outside_its_send_window_is_passed_over_and_keeps_its_place(site):
    """A send_window that does not match this minute skips the service without moving it back in the queue."""
    site.set(serial_per_run=1)
    site.service("alpha", db="d1", letters=ONE_LETTER)
    site.service("zulu", db="d2", letters=ONE_LETTER)
    for name in ("alpha", "zulu"):
        for i in range(5):
            site.subscriber(name, f"{name}{i}@example.org", ago=HOUR + i)
    base = now().replace(second=0)

    assert site.sent_counts(site.run_at(minutes(base, 1))) == {"alpha": 1}
    assert site.sent_counts(site.run_at(minutes(base, 2))) == {"zulu": 1}  # zulu is next after alpha

    opening = minutes(base, 5)
    site.ok("service", "edit", "zulu", "--send-window", f"{opening.minute} * * * *")
    assert site.sent_counts(site.run_at(minutes(base, 3))) == {"alpha": 1}
    assert site.sent_counts(site.run_at(minutes(base, 4))) == {"alpha": 1}
    # zulu was served before alpha's last two turns: in its window it goes first.
    assert site.sent_counts(site.run_at(opening)) == {"zulu": 1}


def test_a_run_with_every_enabled_service_outside_its_window_sends_nothing(site):
    """Series letters and reminders go out only in matching minutes."""
    moment = now().replace(second=0) + timedelta(minutes=1)
    site.service("news", letters=ONE_LETTER,
                 send_window=f"{(moment.minute + 30) % 60} * * * *")
    site.subscriber("news", "a@example.org")
    site.subscriber("news", "b@example.org", state="new", ago=4 * DAY)

    report = site.run_at(moment)
    assert site.sent_counts(report) == {}
    assert letters(site) == []
    assert "send window" in site.log()


def test_a_send_window_applies_to_same_db_fill_as_well(site):
    """A same-DB service outside its window is not used to fill the run."""
    moment = now().replace(second=0) + timedelta(minutes=1)
    site.service("alpha", db="shared", letters=ONE_LETTER)
    site.service("bravo", db="shared", letters=ONE_LETTER,
                 send_window=f"{(moment.minute + 30) % 60} * * * *")
    site.subscriber("alpha", "a@example.org")
    site.subscriber("bravo", "b@example.org")

    assert site.sent_counts(site.run_at(moment)) == {"alpha": 1}
    assert site.subscribers("bravo")["b@example.org"].sent == 0


# --- series delays and clean-up ---------------------------------------------------

def test_the_next_letter_waits_for_its_delay_since_the_previous_one(site):
    """Letter 2 with Delay 2d is not sent before two days have passed since letter 1."""
    site.service("course", letters=[("Lesson 1", "0s", "one"), ("Lesson 2", "2d", "two"),
                                    ("Lesson 3", "1h", "three")])
    site.subscriber("course", "a@example.org", ago=HOUR)
    start = now()

    site.run_at(start)
    assert [m["Subject"] for m in letters(site)] == ["Lesson 1"]
    site.run_at(start + timedelta(minutes=5))
    site.run_at(start + timedelta(seconds=2 * DAY - 60))
    assert len(letters(site)) == 1
    assert site.subscribers("course")["a@example.org"].sent == 1

    site.run_at(start + timedelta(seconds=2 * DAY + 60))
    assert [m["Subject"] for m in letters(site)] == ["Lesson 1", "Lesson 2"]
    site.run_at(start + timedelta(seconds=2 * DAY + 120))
    assert len(letters(site)) == 2  # lesson 3 waits an hour after lesson 2
    site.run_at(start + timedelta(seconds=2 * DAY + HOUR + 61))
    assert [m["Subject"] for m in letters(site)] == ["Lesson 1", "Lesson 2", "Lesson 3"]


def test_the_first_letter_waits_for_its_delay_since_confirmation(site):
    """Letter 1's delay counts from the confirmation."""
    site.service("course", letters=[("Lesson 1", "1d", "one")])
    site.subscriber("course", "early@example.org", ago=DAY + 60)
    site.subscriber("course", "late@example.org", ago=DAY - 600)

    site.run_at()
    assert recipients(site) == ["early@example.org"]


def test_a_finished_subscriber_is_deleted_when_the_service_says_delete_finished(site):
    """delete_finished=yes: the subscriber is deleted right after the last letter, and it is logged."""
    site.service("course", letters=[("Lesson 1", "0s", "one"), ("Lesson 2", "1d", "two")],
                 delete_finished="yes")
    site.subscriber("course", "a@example.org", ago=3 * DAY, sent=1, last_sent_ago=2 * DAY)
    site.subscriber("course", "b@example.org", ago=HOUR, sent=1, last_sent_ago=HOUR)

    site.run_at()
    assert [m["Subject"] for m in letters(site, "a@example.org")] == ["Lesson 2"]
    assert "a@example.org" not in site.subscribers("course")
    assert site.subscribers("course")["b@example.org"].sent == 1
    assert re.search(r"a@example\.org deleted: received the whole series", site.log())


def test_a_finished_subscriber_is_kept_as_done_and_gets_a_letter_appended_later(site):
    """delete_finished=no: state done after the last letter; an appended letter reaches it, its delay counted from its last letter."""
    site.service("course", letters=[("Lesson 1", "0s", "one")], delete_finished="no")
    site.subscriber("course", "a@example.org", ago=HOUR)
    start = now()

    site.run_at(start)
    kept = site.subscribers("course")["a@example.org"]
    assert (kept.state.value, kept.sent) == ("done", 1)
    site.run_at(start + timedelta(minutes=1))
    assert len(letters(site)) == 1

    site.ok("letter", "add", "course", "--subject", "Lesson 2 (new)", "--delay", "1d",
            "--body", "two")
    site.run_at(start + timedelta(seconds=DAY - 60))
    assert len(letters(site)) == 1
    site.run_at(start + timedelta(seconds=DAY + 60))
    assert [m["Subject"] for m in letters(site)] == ["Lesson 1", "Lesson 2 (new)"]
    after = site.subscribers("course")["a@example.org"]
    assert (after.state.value, after.sent) == ("done", 2)
    site.run_at(start + timedelta(seconds=DAY + 120))
    assert len(letters(site)) == 2


def test_an_old_done_subscriber_gets_an_appended_letter_at_once(site):
    """A done subscriber whose last letter is older than the new letter's delay gets it on the next run."""
    site.service("course", letters=[("Lesson 1", "0s", "one")], delete_finished="no")
    site.subscriber("course", "old@example.org", state="done", ago=10 * DAY, sent=1,
                    last_sent_ago=3 * DAY)
    site.subscriber("course", "recent@example.org", state="done", ago=10 * DAY, sent=1,
                    last_sent_ago=HOUR)
    site.run_at()
    assert letters(site) == []

    site.ok("letter", "add", "course", "--subject", "Lesson 2", "--delay", "2d", "--body", "two")
    site.run_at()
    assert recipients(site) == ["old@example.org"]


# --- step 5: reminders ---------------------------------------------------------------

def test_an_unconfirmed_subscriber_is_reminded_each_period_and_deleted_after_the_last(site):
    """reminder_period 3d, reminder_count 2: reminders at 3d and 6d, deletion at 9d, logged."""
    site.service("news", letters=ONE_LETTER)
    site.subscriber("news", "shy@example.org", name="Shy", state="new", ago=0)
    start = now()

    def at(seconds: float) -> None:
        site.run_at(start + timedelta(seconds=seconds))

    at(3 * DAY - 60)
    assert letters(site) == []
    at(3 * DAY + 60)
    [first] = letters(site)
    at(3 * DAY + 120)
    assert len(letters(site)) == 1
    assert site.subscribers("news")["shy@example.org"].reminders == 1

    at(6 * DAY + 30)  # the period counts from the last reminder (sent at 3d + 60s)
    assert len(letters(site)) == 1
    at(6 * DAY + 120)
    assert len(letters(site)) == 2
    assert site.subscribers("news")["shy@example.org"].reminders == 2

    at(9 * DAY + 60)
    assert "shy@example.org" in site.subscribers("news")
    at(9 * DAY + 180)
    assert len(letters(site)) == 2  # no third reminder
    assert "shy@example.org" not in site.subscribers("news")
    assert re.search(r"shy@example\.org deleted: never confirmed", site.log())

    settings = site.settings()
    subject = first["Subject"]
    assert subject == texts.CONFIRM_SUBJECT["ru"].replace("{{ service }}", "News")
    body = first.get_body(("plain",)).get_content()
    [link] = re.findall(r"https://lists\.example\.org/cgi/confirm\.py\?\S+", body)
    token = re.search(r"[?&]t=([^&\s]+)", link).group(1)
    assert tokens.check(settings.secret, "news", "shy@example.org", "confirm", token)
    assert "s=news" in link and "e=shy%40example.org" in link


def test_a_reminder_is_the_confirmation_request_sent_again(site):
    """A reminder has the same subject and text as the confirmation request a new
    subscriber gets, then the list letters' footer (docs/using/services.md#footer)."""
    site.service("news", letters=ONE_LETTER, confirm_subject="Please confirm {{ service }}",
                 confirm_body="Click {{ confirm_url }} please, {{ name }}.")
    site.subscribe("news", "now@example.org", name="Ann")
    [request] = site.outbox()
    site.subscriber("news", "old@example.org", name="Ann", state="new", ago=3 * DAY + 60)

    site.run_at()
    [reminder] = letters(site, "old@example.org")
    assert reminder["Subject"] == request["Subject"] == "Please confirm News"
    text = reminder.get_body(("plain",)).get_content()
    expected = request.get_body(("plain",)).get_content().replace("now%40example.org", "old%40example.org")
    assert re.sub(r"t=[0-9a-f]+", "t=T", text).startswith(
        re.sub(r"t=[0-9a-f]+", "t=T", expected).rstrip() + "\r\n\r\n-- \r\n")
    assert "-- " not in expected
    assert "/cgi/confirm.py?s=news&e=old%40example.org&t=" in text


def test_reminders_and_deletions_happen_for_a_service_without_letters(site):
    """A plain news list (no series) still reminds and cleans up its unconfirmed subscribers."""
    site.service("plain")
    site.subscriber("plain", "remind@example.org", state="new", ago=3 * DAY + 60)
    site.subscriber("plain", "expire@example.org", state="new", ago=9 * DAY, reminders=2,
                    last_reminder_ago=3 * DAY + 60)
    site.subscriber("plain", "wait@example.org", state="new", ago=9 * DAY, reminders=2,
                    last_reminder_ago=DAY)
    site.subscriber("plain", "active@example.org")

    site.run_at()
    assert recipients(site) == ["remind@example.org"]
    left = site.subscribers("plain")
    assert sorted(left) == ["active@example.org", "remind@example.org", "wait@example.org"]
    assert left["remind@example.org"].reminders == 1


def test_a_confirmed_subscriber_of_a_plain_news_list_is_never_deleted_as_finished(site):
    """A service without letters has no series to finish: delete_finished=yes must not delete its confirmed subscribers."""
    site.service("plain", delete_finished="yes")
    site.subscriber("plain", "reader@example.org", ago=DAY)

    site.run_at()
    assert "reader@example.org" in site.subscribers("plain")


# --- sending limits -------------------------------------------------------------

def test_hourly_limit_caps_letters_across_runs_in_the_same_clock_hour(site):
    """hourly_limit=4, serial_per_run=50: four letters in one clock hour over two runs, four more the next hour."""
    site.set(hourly_limit=4, serial_per_run=50)
    site.service("news", letters=ONE_LETTER)
    for i in range(10):
        site.subscriber("news", f"u{i}@example.org", ago=HOUR + i)
    hour = now().replace(minute=0, second=0) + timedelta(hours=1)

    first = site.run_at(hour)
    assert site.sent_counts(first) == {"news": 4}
    assert "limit" in first.splitlines()[-1]
    assert site.sent_counts(site.run_at(hour + timedelta(minutes=20))) == {}
    assert len(letters(site)) == 4

    assert site.sent_counts(site.run_at(hour + timedelta(minutes=55))) == {}
    assert site.sent_counts(site.run_at(hour + timedelta(minutes=60))) == {"news": 4}
    assert len(letters(site)) == 8


def test_hourly_limit_counts_letters_of_same_db_fill_exactly(site):
    """Filling a run from a second service of the DB spends the hourly allowance on letters only."""
    site.set(hourly_limit=4, serial_per_run=50)
    site.service("alpha", db="shared", letters=ONE_LETTER)
    site.service("bravo", db="shared", letters=ONE_LETTER)
    site.subscriber("alpha", "a1@example.org")
    for i in range(5):
        site.subscriber("bravo", f"b{i}@example.org")
    hour = now().replace(minute=10, second=0) + timedelta(hours=1)

    site.run_at(hour)
    site.run_at(hour + timedelta(minutes=5))
    assert len(letters(site)) == 4


def test_alerts_do_not_count_against_the_hourly_limit(site):
    """Alert letters to the admin are outside the hourly cap."""
    site.set(hourly_limit=1)
    site.service("news", letters=ONE_LETTER, enabled=False)
    site.service("other", db="other", letters=ONE_LETTER, enabled=False)
    hour = now().replace(minute=10, second=0) + timedelta(hours=1)
    site.run_at(hour)
    assert [m["Subject"] for m in site.outbox()] == ["all dispatchs is off"]

    site.ok("service", "enable", "news")
    site.subscriber("news", "a@example.org")
    assert site.sent_counts(site.run_at(hour + timedelta(minutes=1))) == {"news": 1}


# --- what every letter carries ---------------------------------------------------

def test_every_letter_of_a_run_carries_its_lease_id_and_the_list_headers(site):
    """X-Vykhukhol-Run equals the lease in the report's first line; list letters have List-Unsubscribe and List-Unsubscribe-Post."""
    site.service("course", letters=[("Lesson {{ name }}", "0s", "one")])
    site.subscriber("course", "a@example.org", name="A")
    site.subscriber("course", "b@example.org", name="B")
    site.subscriber("course", "c@example.org", state="new", ago=4 * DAY)
    site.ok("newsletter", "create", "--services", "course", "--subject", "News", "--body", "hi")

    report = site.run_at()
    lease = lease_of(report)
    assert re.fullmatch(r"[0-9a-f]{16}", lease)
    mail = site.outbox()
    assert len(mail) == 6  # 2 newsletter letters, 2 lesson letters, 1 reminder, 1 report
    assert {m["X-Vykhukhol-Run"] for m in mail} == {lease}
    for m in letters(site):
        if m["Subject"].startswith("Подтвердите"):
            continue  # a reminder is not a list letter
        rcpt = m["To"].addresses[0].addr_spec
        unsubscribe = m["List-Unsubscribe"]
        assert unsubscribe.startswith("<https://lists.example.org/cgi/unsubscribe.py?s=course&e=")
        assert rcpt.replace("@", "%40") in unsubscribe
        assert m["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        assert m["List-Id"]
    assert all(lease in line for line in site.log().splitlines() if "\t" in line)


def test_two_runs_have_different_lease_ids(site):
    """Each run has its own lease id, in its report and its letters."""
    site.set(serial_per_run=1)
    site.service("news", letters=ONE_LETTER)
    site.subscriber("news", "a@example.org", ago=2 * HOUR)
    site.subscriber("news", "b@example.org", ago=HOUR)
    leases = [lease_of(site.run_at()), lease_of(site.run_at())]
    assert leases[0] != leases[1]
    assert [m["X-Vykhukhol-Run"] for m in letters(site)] == leases


# --- the next-due summary -----------------------------------------------------------

def test_a_subscriber_line_added_by_hand_is_served_by_the_next_run(site):
    """A subscriber written into subscribers.txt by hand (FTP) after a run is not hidden by the sender's summary."""
    site.service("news", letters=ONE_LETTER, delete_finished="no")
    site.subscriber("news", "first@example.org")
    site.run_at()
    assert recipients(site) == ["first@example.org"]

    path = svc.find_service(site.data, "news").subscribers_path
    stamp = (now() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("\t".join(("ftp@example.org", "By hand", "active", stamp, stamp, "0", "-",
                                "0", "-", "0", "-")) + "\n")
    site.run_at()
    assert recipients(site) == ["first@example.org", "ftp@example.org"]

"""Misbehaving SMTP server: real ``vykhukhol cron`` runs against a server of
ours that greets with 421, refuses RCPT with 451 or 550, hangs up in the
middle of DATA, or takes ten seconds over an answer (docs/design/run.md#run-failures,
docs/design/run.md#run-time-limit, docs/reference/transports.md#transports).

Each campaign sends the same workload — a newsletter and a two-letter series
— through a stretch of bad behaviour, then lets the server behave and runs
the sender until the work is done. Then every letter is accounted for: it
was received, or refused (logged, and the ledger row or the subscriber
failed), or it is in doubt (logged) — never silently gone — and none arrived
twice. Every run, bad server or not, ends inside ``time_limit`` (10s here),
measured as the wall time of the process.

Short version (CI): a dozen recipients, a few bad runs. Long version:
``VYKHUKHOL_LONG=1`` — more recipients and more bad runs, with the
misbehaving addresses drawn at random.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from support.faultkit import DROP, KEEP_AND_DROP, CronRun, cron, in_doubt, log_entries, scale
from vykhukhol import newsletters
from vykhukhol import services as svc
from vykhukhol.files import kv
from vykhukhol.services import due_summary
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import now

TIME_LIMIT = 10               # seconds: the hoster's limit for one run
READERS = scale(12, 60)       # newsletter recipients; the first COURSE of them also take the series
COURSE = scale(8, 40)
BAD_RUNS = scale(3, 12)       # runs made while the server misbehaves
DRAIN_RUNS = scale(25, 80)    # runs allowed afterwards to finish the work
ISSUE = "Edition 1"
LESSONS = ("Lesson 1", "Lesson 2")
REFUSED = re.compile(r"^(\S+): (\S+) refused \(")
# Deleted for its refusals: an address gone at once (from every service), or at
# bounce_limit (docs/design/run.md#run-failures).
DELETED = re.compile(r"^(\S+): (\S+) deleted: (?:address gone|soft bounces|\d+ soft failures)")


class Campaign:
    """The workload, the runs made so far, and the accounting of every letter."""

    def __init__(self, site: Any, smtp: Any) -> None:
        self.site, self.smtp = site, smtp
        self.runs: list[CronRun] = []
        site.use_smtp(smtp.port)
        site.set(time_limit=f"{TIME_LIMIT}s", news_per_run=100, serial_per_run=100)
        site.service("course", letters=[(s, "0s", f"{s}.\n") for s in LESSONS])
        confirmed = now() - timedelta(hours=1)
        self.readers = [f"reader{i:03}@example.org" for i in range(READERS)]
        self.course = self.readers[:COURSE]
        site.service("news", enabled=False)  # a plain news list
        for name, emails in (("news", self.readers), ("course", self.course)):
            subs.add_many(svc.find_service(site.data, name).subscribers_path,
                          [Subscriber(email=e, state=SubscriberState.ACTIVE,
                                      subscribed=confirmed, confirmed=confirmed)
                           for e in emails])
            due_summary.forget_due(site.data, name)
        self.job = newsletters.create(site.data, ["news"], ISSUE, "Hello.\n")
        self.expected = {(e, ISSUE) for e in self.readers} | \
            {(e, s) for e in self.course for s in LESSONS}

    def run(self) -> CronRun:
        done = cron(self.site.root)
        assert done.code == 0, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        self.runs.append(done)
        return done

    def finished(self) -> bool:
        if newsletters.list_jobs(self.site.data):
            return False
        people = self.site.subscribers("course")
        return all(sub.sent == len(LESSONS) for sub in people.values())

    def drain(self) -> None:
        """The server behaves again: run until the work is done."""
        for _ in range(DRAIN_RUNS):
            if self.finished():
                return
            self.run()

    def check(self) -> Counter:
        """No letter twice, none silently gone, every run inside time_limit;
        returns how the letters ended."""
        slow = [f"{r.seconds:.1f}s ({r.outcome})" for r in self.runs if r.seconds >= TIME_LIMIT]
        assert not slow, f"runs that outlasted time_limit {TIME_LIMIT}s: {slow}"
        assert self.finished(), "the work was not done after the server recovered:\n" + \
            "\n".join(r.report for r in self.runs[-3:])
        got = self.smtp.handler.counts()
        twice = {k: n for k, n in got.items() if n > 1}
        assert not twice, f"letters received twice: {sorted(twice.items())}"
        refused, deleted = set(), set()
        for entry in log_entries(self.site.data):
            found = REFUSED.match(entry.message)
            if found and found.group(1) == self.job:
                refused.add((found.group(2), ISSUE))
            found = DELETED.match(entry.message)
            if found:
                deleted.add(found.group(2))
        doubt = {(email, ISSUE if item == "news" else LESSONS[int(item) - 1])
                 for _, item, email in in_doubt(self.site.data)}
        ends: Counter = Counter()
        gone = []
        for key in sorted(self.expected):
            email, subject = key
            if got[key]:
                ends["received"] += 1
            elif key in refused or email in deleted:  # deleted: every list's letters end
                ends["refused"] += 1
            elif key in doubt:
                ends["in doubt"] += 1
            else:
                gone.append(key)
        assert not gone, f"letters silently gone (not received, not refused, not in doubt): {gone}"
        assert set(got) <= self.expected, f"unexpected letters: {set(got) - self.expected}"
        print(f"{dict(ends)}; runs {len(self.runs)}, longest {max(r.seconds for r in self.runs):.1f}s")
        return ends


def some(rng: Any, emails: list[str], share: float) -> set[str]:
    return set(rng.sample(emails, max(1, int(len(emails) * share))))


def test_a_server_greeting_with_421_delays_letters_and_loses_none(site, bad_smtp, rng):
    """421 at connect: runs stop politely inside time_limit; once it greets again, all arrive once."""
    campaign = Campaign(site, bad_smtp)
    bad_smtp.handler.on_connect = lambda: "421 4.3.2 too busy, try later"
    for _ in range(BAD_RUNS):
        done = campaign.run()
        assert done.outcome == "temporary failure", done.report
    assert not bad_smtp.handler.kept()
    bad_smtp.handler.on_connect = lambda: None
    campaign.drain()
    assert campaign.check()["received"] == len(campaign.expected)


def pauses_pass(site: Any) -> None:
    """The deferred recipients' pauses are over (as if 15 minutes had passed)."""
    def change(values: dict[str, str]) -> None:
        for key, value in values.items():
            parts = value.split()
            if len(parts) == 3 and parts[1] != "-":
                values[key] = " ".join((parts[0], "2000-01-01T00:00:00Z", parts[2]))
    kv.change_kv(site.data.state / "tempfail", change)


def test_greylisting_451_at_rcpt_delays_letters_and_loses_none(site, bad_smtp, rng):
    """451 at RCPT for some addresses, for a while: those are deferred alone and the
    others all go in the meantime; once their pauses pass, all arrive once."""
    campaign = Campaign(site, bad_smtp)
    greylisted = some(rng, campaign.readers, 0.3)
    tries: Counter = Counter()

    def rcpt(address: str) -> str | None:
        tries[address] += 1
        return "451 4.7.1 greylisted, come back later" if address in greylisted \
            and tries[address] <= 2 else None

    bad_smtp.handler.on_rcpt = rcpt
    for _ in range(BAD_RUNS):
        campaign.run()
    got = bad_smtp.handler.counts()
    held = [key for key in campaign.expected if key[0] not in greylisted and not got[key]]
    assert not held, f"letters held back by the greylisted ones: {held}"
    for _ in range(3):
        pauses_pass(site)
        campaign.drain()
    assert campaign.check()["received"] == len(campaign.expected)


def test_550_at_rcpt_marks_letters_failed_and_sends_the_others_once(site, bad_smtp, rng):
    """550 at RCPT for some addresses: their letters end failed (logged), never retried past the rule; others once."""
    campaign = Campaign(site, bad_smtp)
    refused = some(rng, campaign.course, 0.25) | some(rng, campaign.readers, 0.1)
    bad_smtp.handler.on_rcpt = lambda a: "550 5.1.1 no such user" if a in refused else None
    for _ in range(BAD_RUNS):
        campaign.run()
    campaign.drain()
    ends = campaign.check()
    assert not {rcpt for rcpt, _ in bad_smtp.handler.data_seen} & refused, \
        "a refused address reached DATA"
    assert ends["refused"] >= len(refused)
    assert not {e for e in refused if e in campaign.site.subscribers("course")}, \
        "a subscriber refused on every try is still subscribed"


def test_a_server_hanging_up_mid_data_leaves_letters_in_doubt_never_twice(site, bad_smtp, rng):
    """Connection dropped in DATA (letter kept or not): that letter is in doubt, never re-sent; the rest arrive."""
    campaign = Campaign(site, bad_smtp)
    victims = some(rng, campaign.readers, 0.3)
    dropped: Counter = Counter()

    def data(rcpt: str) -> str | None:
        if rcpt in victims and not dropped[rcpt]:
            dropped[rcpt] += 1
            return rng.choice([DROP, KEEP_AND_DROP])
        return None

    bad_smtp.handler.on_data = data
    for _ in range(BAD_RUNS):
        campaign.run()
    bad_smtp.handler.on_data = lambda rcpt: None
    campaign.drain()
    ends = campaign.check()
    seen = Counter(bad_smtp.handler.data_seen)
    assert all(n == 1 for n in seen.values()), \
        f"letters whose DATA reached the server twice: {[k for k, n in seen.items() if n > 1]}"
    assert ends["in doubt"] + ends["received"] == len(campaign.expected)


@pytest.mark.parametrize("command", ["EHLO", "RCPT", "DATA"])
def test_a_server_taking_10_seconds_to_answer_never_holds_a_run_past_time_limit(
        site, bad_smtp, rng, command):
    """10-second answers with time_limit 10s: every run ends inside it; no letter lost or sent twice."""
    campaign = Campaign(site, bad_smtp)
    bad_smtp.handler.delays[command] = 10.0
    for _ in range(scale(1, 4)):
        done = campaign.run()
        assert done.seconds < TIME_LIMIT, f"{done.seconds:.1f}s:\n{done.report}"
    bad_smtp.handler.delays.clear()
    campaign.drain()
    campaign.check()

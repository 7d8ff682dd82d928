"""Parallel crons: eight ``vykhukhol cron`` runs started together, round after
round: two runs never send at the same time on one DB or on the
newsletters (docs/design/run.md#run-killed).

Each process imports everything first and then waits for a start signal, so
the eight runs really race for the rename locks. Half the rounds start them at
the same instant; the other half spread the starts over about one run's length,
so some runs arrive while others release. Every round brings new work: fresh
subscribers due for letter 1 in two DBs, and a newsletter.

Checked from the SMTP server's side, by the ``X-Vykhukhol-Run`` header and the
moment each letter arrived: for each DB and for the newsletters, the letters
of one run never interleave in time with another run's. No letter arrives
twice, no run blocks itself (nobody was killed), and after the rounds a few
more runs deliver everything.

Short version (CI): 5 rounds. Long version: ``VYKHUKHOL_LONG=1`` — 50 rounds.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import defaultdict
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from support.faultkit import ADMIN, LEASE, cron, env, scale
from vykhukhol import newsletters
from vykhukhol import services as svc
from vykhukhol.files import kv
from vykhukhol.services import due_summary
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import now

ROUNDS = scale(5, 50)
RUNS = 8
NEW_PER_ROUND = 12      # subscribers due for letter 1, per series service and round
READERS = 24            # subscribers of the news service (each newsletter's recipients)
PER_RUN = 6             # news_per_run and serial_per_run: several runs' worth each round
DATA_DELAY = 0.03
CAP = 10_000            # hourly and daily limit: never reached, but counted by the racing runs
SERIES = {"pa": ("a", "A letter"), "pb": ("b", "B letter")}

# Imports everything a run needs, waits for the start signal, then runs.
LAUNCHER = """
import os, sys, time
from vykhukhol import cli
go, root, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
while not os.path.exists(go):
    time.sleep(0.0005)
time.sleep(delay)
sys.exit(cli.main(["--data", root, "cron"]))
"""


def domain_of(subject: str) -> str:
    for db, letter in SERIES.values():
        if subject == letter:
            return f"DB {db}"
    return "newsletters"


def add_round(site: Any, number: int) -> set[tuple[str, str]]:
    """New subscribers due now in both series, and a newsletter; what must arrive."""
    expected = set()
    confirmed = now() - timedelta(hours=1)
    for name, (_, subject) in SERIES.items():
        emails = [f"{name}-{number}-{i}@example.org" for i in range(NEW_PER_ROUND)]
        path = svc.find_service(site.data, name).subscribers_path
        subs.add_many(path, [Subscriber(email=e, state=SubscriberState.ACTIVE,
                                        subscribed=confirmed, confirmed=confirmed)
                             for e in emails])
        due_summary.forget_due(site.data, name)
        expected |= {(e, subject) for e in emails}
    issue = f"Issue {number}"
    newsletters.create(site.data, ["readers"], issue, "Hello {{ name }}.\n")
    expected |= {(f"reader-{i}@example.org", issue) for i in range(READERS)}
    return expected


def race(root: Path, go: Path, delays: list[float]) -> list[tuple[int, str, str]]:
    procs = [subprocess.Popen([sys.executable, "-c", LAUNCHER, str(go), str(root), f"{d:.3f}"],
                              env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for d in delays]
    time.sleep(1.0)  # let every process finish its imports and wait at the line
    go.touch()
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        results.append((proc.returncode, out, err))
    go.unlink()
    return results


def overlaps(letters: list[Any]) -> list[str]:
    """Pairs of runs whose letters for one lock interleave in time."""
    spans: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for got in letters:
        if got.rcpt == ADMIN:
            continue
        span = spans[domain_of(got.subject)].setdefault(got.run, [got.at, got.at])
        span[0], span[1] = min(span[0], got.at), max(span[1], got.at)
    found = []
    for domain, by_run in spans.items():
        ordered = sorted(by_run.items(), key=lambda item: item[1][0])
        for (run1, (_, end1)), (run2, (start2, _)) in zip(ordered, ordered[1:], strict=False):
            if start2 <= end1:
                found.append(f"{domain}: run {run2} began sending at {start2:.3f} "
                             f"before run {run1} ended at {end1:.3f}")
    return found


def per_run_counts(letters: list[Any]) -> dict[tuple[str, str], int]:
    """Letters per (run, kind): ``news`` or ``series``."""
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for got in letters:
        if got.rcpt != ADMIN:
            counts[got.run, "news" if domain_of(got.subject) == "newsletters" else "series"] += 1
    return counts


@pytest.mark.parametrize("connections", [1, 4])
def test_eight_runs_started_together_never_send_on_one_lock_at_once(site, bad_smtp, rng, tmp_path,
                                                                   connections):
    """8 crons at once, round after round: per DB and newsletters, runs' letters never interleave;
    none twice; no run above its quotas; the caps' counters exact (also with 4 connections each)."""
    site.use_smtp(bad_smtp.port)
    site.set(news_per_run=PER_RUN, serial_per_run=PER_RUN, time_limit="30s",
             hourly_limit=CAP, daily_limit=CAP, mail__smtp_connections=connections)
    bad_smtp.handler.pipelining = connections > 1
    for name, (db, subject) in SERIES.items():
        site.service(name, db=db, letters=[(subject, "0s", "Hello.\n")])
    site.service("readers", db="n", enabled=False)  # a plain news list
    confirmed = now() - timedelta(hours=1)
    subs.add_many(svc.find_service(site.data, "readers").subscribers_path,
                  [Subscriber(email=f"reader-{i}@example.org", state=SubscriberState.ACTIVE,
                              subscribed=confirmed, confirmed=confirmed)
                   for i in range(READERS)])
    bad_smtp.handler.delays["DATA"] = DATA_DELAY
    go = tmp_path / "go"
    expected: set[tuple[str, str]] = set()
    outcomes: dict[str, int] = defaultdict(int)
    senders_per_round = []

    for number in range(ROUNDS):
        expected |= add_round(site, number)
        spread = 0.0 if number % 2 == 0 else 1.5
        results = race(site.root, go, [rng.uniform(0, spread) for _ in range(RUNS)])
        leases = set()
        for code, out, err in results:
            assert code == 0, f"round {number}: a run exited {code}: {err}"
            assert "Traceback" not in err, err
            outcome = out.splitlines()[-1].rsplit(": ", 1)[-1]
            outcomes[outcome] += 1
            assert outcome != "blocked", f"round {number}: a run blocked itself:\n{out}"
            leases.add(LEASE.search(out).group(1))
        kept = bad_smtp.handler.kept()
        senders_per_round.append(len({got.run for got in kept if got.run in leases}))
        clash = overlaps(kept)
        assert not clash, f"round {number}: two runs sent at once:\n" + "\n".join(clash[:10])
        twice = {k: n for k, n in bad_smtp.handler.counts().items() if n > 1}
        assert not twice, f"round {number}: letters received twice: {sorted(twice.items())[:10]}"

    for _ in range(ROUNDS * 12):
        if set(bad_smtp.handler.counts()) >= expected:
            break
        run = cron(site.root)
        assert run.code == 0 and run.outcome != "blocked", run.report + run.stderr
    got = bad_smtp.handler.counts()
    print(f"parallel crons: {ROUNDS} rounds of {RUNS} runs, outcomes {dict(outcomes)}, "
          f"runs that sent per round {senders_per_round}, {sum(got.values())} letters")
    assert max(got.values()) == 1, "a letter arrived twice"
    assert set(got) == expected, f"missing: {sorted(expected - set(got))[:10]}, " \
                                 f"unexpected: {sorted(set(got) - expected)[:10]}"
    assert not overlaps(bad_smtp.handler.kept())
    assert sum(senders_per_round) > ROUNDS, "the rounds never had more than one run sending"
    over = {key: n for key, n in per_run_counts(bad_smtp.handler.kept()).items() if n > PER_RUN}
    assert not over, f"runs sent more than news_per_run/serial_per_run ({PER_RUN}): {over}"
    # the caps' counters, reserved and given back by racing runs, count each letter once
    counted = kv.read_kv(site.data.state / "counters")
    assert int(counted["day_count"]) == sum(got.values()), counted

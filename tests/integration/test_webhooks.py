"""Webhooks out (docs/using/webhooks.md#webhooks): events journalled as they
happen, delivered by the sender's run to a real receiver on loopback, signed
as Standard Webhooks says (checked by the receiver's own algorithm), retried
with the same id, never lost to a kill, and never posted where they must not go."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.clikit import refused
from support.hookkit import Authority
from support.webhookkit import Receiver, verify
from vykhukhol.files import events
from vykhukhol.webhooks import dispatch, endpoints, progress

LIB = Path(__file__).resolve().parents[2] / "lib"


@pytest.fixture
def receiver():
    made: list[Receiver] = []

    def make(answers=None, tls_file=None) -> Receiver:
        made.append(Receiver(answers, tls_file))
        return made[-1]

    yield make
    for r in made:
        r.close()


def secret_of(out: str) -> str:
    return out.split("shown once; give it to the receiver): ", 1)[1].split()[0]


def cron(site, timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(site.root), "cron"],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(LIB), **env})


def test_an_event_reaches_the_receiver_signed(fresh_site, receiver) -> None:
    r = receiver()
    fresh_site.service("news")
    secret = secret_of(fresh_site.ok("webhook", "add", "shop", r.url))
    fresh_site.subscribe("news", "anna@example.org", name="Anna")
    journal = fresh_site.data.webhooks / events.JOURNAL
    assert "subscriber.subscribed" in journal.read_text()
    result = cron(fresh_site)
    assert result.returncode == 0, result.stderr
    (got,) = r.wait(1)
    assert verify(secret, got.headers, got.body), got.headers
    assert got.json["type"] == "subscriber.subscribed"
    assert got.json["data"] == {"service": "news", "email": "anna@example.org"}
    assert got.id.startswith("msg_")
    assert journal.stat().st_size == 0, "a journal every endpoint took is emptied"
    assert "webhooks: 1 delivered" in fresh_site.log()
    shown = fresh_site.ok("webhook", "log", "shop")
    assert got.id in shown and "subscriber.subscribed" in shown


def test_a_forged_signature_fails_the_reference_check(fresh_site, receiver) -> None:
    r = receiver()
    fresh_site.ok("webhook", "add", "shop", r.url)
    assert dispatch.send_test(fresh_site.data, "shop", debug=True).ok
    (got,) = r.wait(1)
    other = endpoints.Endpoint("x", r.url, secret="whsec_" + "A" * 44).secret
    assert not verify(other, got.headers, got.body)
    assert not verify(endpoints.load(fresh_site.data)[0].secret, got.headers, got.body + b" ")
    assert verify(endpoints.load(fresh_site.data)[0].secret, got.headers, got.body)


def test_no_webhook_no_journal(fresh_site) -> None:
    fresh_site.service("news")
    fresh_site.subscribe("news", "anna@example.org")
    assert not fresh_site.data.webhooks.exists()


def test_events_filter_and_confirm_over_https_in_working_mode(site, receiver, tmp_path,
                                                              monkeypatch) -> None:
    authority = Authority(tmp_path)
    r = receiver(tls_file=authority.tls_file)
    site.service("news")
    out = site.ok("webhook", "add", "crm", r.url, "--events", "subscriber.confirmed",
                  "--allow-private")
    secret = secret_of(out)
    site.subscribe("news", "boris@example.org")
    from vykhukhol.members import membership

    assert membership.confirm(site.data, site.settings(), "news", "boris@example.org")
    result = cron(site, SSL_CERT_FILE=str(authority.ca_file))
    assert result.returncode == 0, result.stderr
    (got,) = r.wait(1)
    assert got.json["type"] == "subscriber.confirmed" and verify(secret, got.headers, got.body)
    time.sleep(0.3)
    assert len(r.got) == 1, "the subscribed event was not wanted"


def test_https_to_loopback_needs_the_owners_leave(site, receiver, tmp_path) -> None:
    authority = Authority(tmp_path)
    r = receiver(tls_file=authority.tls_file)
    site.ok("webhook", "add", "crm", r.url)
    answer = dispatch.send_test(site.data, "crm", debug=False)
    assert not answer.ok and "private" in answer.problem
    assert r.got == []


def test_http_only_in_debug_and_only_to_this_machine(site, receiver) -> None:
    refused(site, "webhook", "add", "x", "http://hooks.example.org/in", says=("https",))
    refused(site, "webhook", "add", "x", "ftp://127.0.0.1/in", says=("https",))
    refused(site, "webhook", "add", "x", "https://user:pw@hooks.example.org/", says=("password",))
    refused(site, "webhook", "add", "x", "https://hooks.example.org/", "--events", "everything",
            says=("no event",))
    r = receiver()
    site.ok("webhook", "add", "local", r.url)
    answer = dispatch.send_test(site.data, "local", debug=False)
    assert not answer.ok and "debug" in answer.problem and r.got == []


def test_a_failure_is_retried_later_with_the_same_id(fresh_site, receiver) -> None:
    r = receiver([503])
    fresh_site.ok("webhook", "add", "shop", r.url)
    events.emit(fresh_site.data.root, "subscriber.unsubscribed", {"service": "news", "email": "a@example.org"})
    events.emit(fresh_site.data.root, "subscriber.unsubscribed", {"service": "news", "email": "b@example.org"})
    start = time.time()
    summary = dispatch.deliver(fresh_site.data, True, 5.0, wall=lambda: start)
    assert summary.failed and not summary.delivered
    assert len(r.got) == 1, "a failing endpoint stops for the run"
    (waiting,) = progress.read_retries(fresh_site.data, "shop")
    assert waiting.id == r.got[0].id and waiting.next_at == int(start) + progress.PAUSES[0]
    dispatch.deliver(fresh_site.data, True, 5.0, wall=lambda: start + 30)  # not yet due: b goes, a waits
    assert [d.json["data"]["email"] for d in r.got] == ["a@example.org", "b@example.org"]
    dispatch.deliver(fresh_site.data, True, 5.0, wall=lambda: start + 61)
    assert r.got[2].id == r.got[0].id and r.got[2].body == r.got[0].body
    assert progress.read_retries(fresh_site.data, "shop") == []


def test_given_up_after_three_days_and_disabled_with_an_alert(site, receiver) -> None:
    r = receiver([500] * 10)
    site.ok("webhook", "add", "shop", "https://127.0.0.1:9/hook", "--allow-private")
    events.emit(site.data.root, "subscriber.unsubscribed", {"service": "news", "email": "a@example.org"})
    long_ago = int(time.time()) - progress.GIVE_UP - 10
    progress.write_retries(site.data, "shop", [progress.Pending(
        events.new_id(long_ago), long_ago, "subscriber.unsubscribed", "{}", 7, long_ago, long_ago)])
    progress.write_progress(site.data, progress.Progress("shop", events.generation(site.data.root),
                                                         0, long_ago))
    result = cron(site)
    assert result.returncode == 0, result.stderr
    (shop,) = endpoints.load(site.data)
    assert not shop.enabled
    log = site.log()
    assert "webhook is off" in log or "Webhook shop is switched off" in log, log
    assert "given up" in site.ok("webhook", "log", "shop")
    del r


def test_a_stalled_receiver_costs_its_share_of_the_run(fresh_site, receiver) -> None:
    r = receiver([("stall", 30)])
    fresh_site.ok("webhook", "add", "slow", r.url)
    events.emit(fresh_site.data.root, "subscriber.unsubscribed", {"service": "news", "email": "a@example.org"})
    began = time.monotonic()
    summary = dispatch.deliver(fresh_site.data, True, 1.5)
    took = time.monotonic() - began
    assert summary.failed and "no answer in time" in summary.failed[0]
    assert took < 10, f"the deadline held the post for {took:.1f} s"


def test_a_redirect_is_not_followed_and_an_endless_answer_is_cut(fresh_site, receiver) -> None:
    other = receiver()
    r = receiver([("redirect", other.url), "endless"])
    fresh_site.ok("webhook", "add", "shop", r.url)
    first = dispatch.send_test(fresh_site.data, "shop", debug=True)
    assert not first.ok and first.status == 302 and "redirect" in first.problem
    assert other.got == []
    second = dispatch.send_test(fresh_site.data, "shop", debug=True)
    assert second.status == 200  # the answer's first 64 KiB read, the rest left unread


def test_kill_between_the_event_and_its_delivery_delivers_it_again(fresh_site, receiver) -> None:
    r = receiver([("stall", 20)])
    fresh_site.ok("webhook", "add", "shop", r.url)
    fresh_site.service("news")
    fresh_site.subscribe("news", "anna@example.org")
    process = subprocess.Popen([sys.executable, "-m", "vykhukhol", "--data", str(fresh_site.root), "cron"],
                               env={**os.environ, "PYTHONPATH": str(LIB)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert len(r.wait(1, 30)) == 1, "the run never posted"
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(10)
    first = r.got[0].id
    result = cron(fresh_site)
    assert result.returncode == 0, result.stderr
    got = r.wait(2)
    assert [d.id for d in got] == [first, first], "delivered again, with the same id"
    cron(fresh_site)
    time.sleep(0.3)
    assert len(r.got) == 2, "and once only after it was taken"


def journalled(site) -> list[tuple[str, dict]]:
    import json

    path = site.data.webhooks / events.JOURNAL
    return [(kind, json.loads(data)) for _, _, _, kind, data in events.read(path)]


def test_each_change_of_a_list_is_journalled_once(site) -> None:
    from vykhukhol.members import membership, suppression
    from vykhukhol.timeutil import now

    site.ok("webhook", "add", "shop", "https://hooks.example.org/in")
    site.service("news")
    site.service("tips")
    site.subscriber("news", "gone@example.org")
    site.subscriber("tips", "gone@example.org")
    site.subscriber("news", "leaves@example.org")
    assert membership.unsubscribe(site.data, "news", "leaves@example.org")
    assert not membership.unsubscribe(site.data, "news", "leaves@example.org")  # not there: no event
    membership.forget_everywhere(site.data, site.settings(), "gone@example.org",
                                 suppression.Why.GONE, "smtp", now())
    site.subscribe("news", "gone@example.org")  # suppressed: answered alike, told nothing
    assert journalled(site) == [
        ("subscriber.unsubscribed", {"service": "news", "email": "leaves@example.org"}),
        ("suppression.added", {"email": "gone@example.org", "reason": "address gone", "source": "smtp"}),
        ("subscriber.removed", {"service": "news", "email": "gone@example.org",
                                "reason": "address gone", "source": "smtp"}),
        ("subscriber.removed", {"service": "tips", "email": "gone@example.org",
                                "reason": "address gone", "source": "smtp"}),
    ]


def test_an_event_sends_the_idle_tick_the_full_way(site, monkeypatch) -> None:
    from vykhukhol import sender
    from vykhukhol.sender import idle

    monkeypatch.setattr(idle, "RACY", 0.0)
    site.ok("webhook", "add", "shop", "https://hooks.example.org/in")
    site.service("quiet", letters=[("Lesson 1", "3650d", "Hello.\n")])
    site.subscriber("quiet", "waiting@example.org")
    sender.run(site.data, site.settings())
    assert idle.tick(str(site.data.root)) is not None, "nothing due: the proof holds"
    events.emit(site.data.root, "subscriber.unsubscribed", {"service": "quiet", "email": "x@example.org"})
    assert idle.tick(str(site.data.root)) is None, "an event to deliver: a full run"


def test_a_damaged_journal_line_is_passed_over(fresh_site, receiver) -> None:
    r = receiver()
    fresh_site.ok("webhook", "add", "shop", r.url)
    journal = fresh_site.data.webhooks / events.JOURNAL
    journal.write_bytes(b"garbage\nmsg_1\tx\tsubscriber.confirmed\t{}\n\xff\xfe\t1\tno.such\t{}\n")
    events.emit(fresh_site.data.root, "subscriber.confirmed", {"service": "news", "email": "a@example.org"})
    with journal.open("ab") as torn:
        torn.write(b"msg_2\t1\tsubscriber.confirmed\t{")  # a write cut by a kill: no line end
    summary = dispatch.deliver(fresh_site.data, True, 5.0)
    assert summary.delivered == 1 and [d.json["data"]["email"] for d in r.wait(1)] == ["a@example.org"]
    assert dispatch.next_due(fresh_site.data) is None, "a torn tail is not waited for"
    assert journal.stat().st_size == 0, "and the journal, all taken, is emptied"


def test_a_stalled_https_receiver_is_cut_at_the_deadline_too(site, receiver, tmp_path,
                                                            monkeypatch) -> None:
    authority = Authority(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(authority.ca_file))
    r = receiver([("stall", 30)], tls_file=authority.tls_file)
    site.ok("webhook", "add", "slow", r.url, "--allow-private")
    events.emit(site.data.root, "subscriber.unsubscribed", {"service": "news", "email": "a@example.org"})
    began = time.monotonic()
    summary = dispatch.deliver(site.data, False, 1.5)
    assert summary.failed and "no answer in time" in summary.failed[0], summary.failed
    assert time.monotonic() - began < 10


def test_a_damaged_generation_file_starts_the_journal_again(fresh_site, receiver) -> None:
    r = receiver()
    fresh_site.ok("webhook", "add", "shop", r.url)
    (fresh_site.data.webhooks / "generation").write_text("not a number\n")
    events.emit(fresh_site.data.root, "subscriber.unsubscribed", {"service": "news", "email": "a@example.org"})
    assert dispatch.deliver(fresh_site.data, True, 5.0).delivered == 1
    assert (fresh_site.data.webhooks / "generation").read_text().strip() == "1"

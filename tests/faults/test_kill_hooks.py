"""Kill campaign, callback phase: ``kill -9`` of the real CGI script
``cgi/hook.py`` while it applies a provider's report, then the provider's
retry of the same event: applied exactly once
(docs/design/journal.md#journal-bounces).

Each subscriber gets two soft failures (a full mailbox counts once
per letter, and an address gone would be deleted at the first), each a
different event id of the generic form; some callbacks are killed at a random moment (starting,
reading, writing the journal, rewriting the subscriber file) and sent again
until one is answered 200, as a provider retries an unanswered callback.
Some answered ones are sent again anyway (a provider that missed the 200).

In the end every subscriber's failure count is exactly 2, and every data
file parses. Short version (CI): 6 subscribers, 6 kills. Long
(``VYKHUKHOL_LONG=1``): 60 subscribers, 50 kills.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from support.faultkit import assert_data_parses, kill_now, scale
from vykhukhol.bounces.providers.generic import signature

SUBSCRIBERS = scale(6, 60)
KILLS = scale(6, 50)
HOOK = Path(__file__).resolve().parents[2] / "cgi" / "hook.py"
SECRET = "generic-secret-0123456789abcdef-0123456789"  # hooks.generic_secret: the form is on


def callback(site, key: str, body: bytes) -> subprocess.Popen:
    """One callback, its body on standard input as a web server gives it (a file:
    kill_now's communicate() needs no open pipe to write to)."""
    environ = {"GATEWAY_INTERFACE": "CGI/1.1", "SERVER_NAME": "localhost", "SERVER_PORT": "80",
               "SERVER_PROTOCOL": "HTTP/1.1", "REQUEST_METHOD": "POST",
               "SCRIPT_NAME": "/cgi/hook.py", "PATH_INFO": "/generic",
               "QUERY_STRING": f"key={key}", "SCRIPT_FILENAME": str(HOOK),
               "REMOTE_ADDR": "127.0.0.1", "CONTENT_TYPE": "application/json",
               "CONTENT_LENGTH": str(len(body)), "PATH": os.environ["PATH"],
               "HTTP_X_VYKHUKHOL_SIGNATURE": signature(SECRET, body),
               "VYKHUKHOL_DATA": str(site.root), "PYTHONNOUSERSITE": "1"}
    request = site.root.parent / "request.json"
    request.write_bytes(body)
    with request.open("rb") as stdin:
        return subprocess.Popen([str(HOOK)], env=environ, stdin=stdin, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)


def answered(proc: subprocess.Popen) -> bool:
    out, _ = proc.communicate(timeout=60)
    return out.startswith(b"Status: 200") or b"\nStatus: 200" in out[:200]


def test_killed_callbacks_and_retries_apply_each_event_exactly_once(site, rng):
    site.service("course", letters=[("Lesson 1", "0s", "Hello."), ("Lesson 2", "30d", "Again.")])
    addresses = [f"hooked{i}@example.net" for i in range(SUBSCRIBERS)]
    for address in addresses:
        site.subscriber("course", address, sent=1, last_sent_ago=60)
    key = site.settings()["hooks.key"]
    site.set(hooks__generic_secret=SECRET)
    events = [(address, f"{address}/{n}") for n in range(2) for address in addresses]
    rng.shuffle(events)
    to_kill = set(rng.sample(range(len(events)), KILLS))
    # How long one whole callback takes on this machine now (a report about
    # an address nobody has: it changes nothing), so the kills fall inside
    # the callbacks however loaded the machine is.
    started = time.monotonic()
    assert answered(callback(site, key, json.dumps({
        "address": "nobody@example.net", "kind": "permanent", "id": "warm-up",
        "diagnostic": "550 5.1.1 user unknown"}).encode()))
    whole = time.monotonic() - started
    kills = 0
    for number, (address, event) in enumerate(events):
        body = json.dumps({"address": address, "kind": "permanent", "id": event,
                           "diagnostic": "552 5.2.2 mailbox full"}).encode()
        if number in to_kill:
            proc = callback(site, key, body)
            time.sleep(rng.uniform(0.1, 0.9) * whole)  # start-up, the journal, the rewrite
            kills += kill_now(proc)
        while True:  # the provider retries until it is answered 200
            started = time.monotonic()
            if answered(callback(site, key, body)):
                whole = time.monotonic() - started
                break
        if rng.random() < 0.2:  # the 200 was lost on the way: the provider sends it again
            assert answered(callback(site, key, body))
    assert kills >= KILLS // 2, f"only {kills} of {KILLS} callbacks were still running when killed"
    counts = {address: sub.failures for address, sub in site.subscribers("course").items()}
    assert counts == {address: 2 for address in addresses}, counts
    assert_data_parses(site.data)

"""Subscriptions under load: fifty parallel subscribe and unsubscribe requests
through ``vykhukhol serve`` and fifty through the CGI scripts, while
``vykhukhol cron`` runs one after another rewrite the same subscriber file
and the same newsletter ledger (every rewrite is atomic: docs/reference/data-files.md#data-files-writes).

Three kinds of request, mixed: a new address subscribes; a subscriber leaves
by its unsubscribe link; a new address subscribes and, once stored (after
the answer), leaves.
Afterwards nothing is lost (every address that subscribed and did not leave
is in the file, and so is every old subscriber who did not leave) and nothing
is resurrected (every address that left is absent), and every file still
parses. Every request is answered 200 — or, when a file stays locked longer
than the record lock's timeout, 503 "please try again later", a page the person
reads (then the request counts as not made; at most one in ten may be).

Short version (CI): one round of 50 + 50 requests. Long version:
``VYKHUKHOL_LONG=1`` — ten rounds.
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from support.faultkit import assert_data_parses, cron, env, free_port, scale, subscriber_sets
from vykhukhol import newsletters, tokens
from vykhukhol import services as svc
from vykhukhol.services import due_summary
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import Subscriber
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import now

CHECKOUT = Path(__file__).resolve().parents[2]
ROUNDS = scale(1, 10)
PARALLEL = 50                # requests at once through each way in
OLD = scale(4000, 8000)      # subscribers already there, due for letter 1: every run rewrites them
PER_RUN = 20                 # letters per run: short runs, many rewrites
FORM = "application/x-www-form-urlencoded"


class Serve:
    """One ``vykhukhol serve --no-ticker`` process."""

    def __init__(self, site: Any, folder: Path) -> None:
        self.port = free_port()
        folder.mkdir(exist_ok=True)
        self.err_path = folder / "serve.err"
        with (folder / "serve.out").open("wb") as out, self.err_path.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "vykhukhol", "--data", str(site.root), "serve", "--host",
                 "127.0.0.1", "--port", str(self.port), "--no-ticker", "--cgi-dir", str(site.cgi_dir)],
                env=env(), stdout=out, stderr=err)
        deadline = time.monotonic() + 20
        while True:
            try:
                self.post("/cgi/subscribe.py", b"")
                return
            except OSError:
                assert self.proc.poll() is None and time.monotonic() < deadline, self.stderr()
                time.sleep(0.05)

    def post(self, path: str, body: bytes) -> tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request("POST", path, body=body, headers={"Content-Type": FORM})
            response = conn.getresponse()
            return response.status, response.read().decode("utf-8", "replace")
        finally:
            conn.close()

    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Cgi:
    """The checkout's scripts copied as an admin uploads them, naming the data directory."""

    def __init__(self, site: Any, folder: Path) -> None:
        for part in ("lib", "cgi"):
            shutil.copytree(CHECKOUT / part, folder / part, ignore=shutil.ignore_patterns(
                "__pycache__", "*.pyc", "vykhukhol.path", "cron-*.py", "*.egg-info"))
        (folder / "cgi" / "vykhukhol.path").write_text(f"{site.root}\n", encoding="utf-8")
        self.folder = folder

    def post(self, path: str, body: bytes) -> tuple[int, str]:
        script = self.folder / path.lstrip("/")
        environ = {
            "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_SOFTWARE": "test", "SERVER_NAME": "localhost",
            "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1", "REQUEST_METHOD": "POST",
            "SCRIPT_NAME": path, "SCRIPT_FILENAME": str(script), "QUERY_STRING": "",
            "REMOTE_ADDR": "127.0.0.1", "PATH": os.environ["PATH"], "CONTENT_TYPE": FORM,
            "CONTENT_LENGTH": str(len(body)), "PYTHONDONTWRITEBYTECODE": "1",
        }
        done = subprocess.run([sys.executable, str(script)], env=environ, input=body,
                              capture_output=True, cwd=script.parent, timeout=120)
        out = done.stdout.decode("utf-8", "replace")
        head, _, page = out.partition("\r\n\r\n") if "\r\n\r\n" in out else out.partition("\n\n")
        status = 200
        for line in head.splitlines():
            if line.lower().startswith("status:"):
                status = int(line.split()[1])
        if done.returncode != 0 or "Traceback" in done.stderr.decode(errors="replace"):
            status = 599
            page += done.stderr.decode(errors="replace")
        return status, page


def message(page: str) -> str:
    """What a page says, without its markup (enough to tell pages apart)."""
    text = " ".join(re.sub(r"(?s)<style.*?</style>|<[^>]+>", " ", page).split())
    return text[:300]


class CronLoop(threading.Thread):
    """Sender runs one after another until stopped, as a busy crontab would."""

    def __init__(self, root: Path) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.stopping = threading.Event()
        self.runs: list[Any] = []

    def run(self) -> None:
        while not self.stopping.is_set():
            self.runs.append(cron(self.root))


def test_parallel_subscribes_and_unsubscribes_during_runs_lose_and_resurrect_nothing(
        site, bad_smtp, tmp_path):
    """50 + 50 parallel requests through serve and CGI while runs rewrite the files: none lost, none resurrected."""
    site.use_smtp(bad_smtp.port)
    site.set(language="en", serial_per_run=PER_RUN, news_per_run=PER_RUN,
             subscribe_hourly_limit=10**6, subscribe_alarm=0)  # every request comes from one address
    site.service("news", letters=[("Lesson 1", "0s", "Hello.\n")])
    path = svc.find_service(site.data, "news").subscribers_path
    confirmed = now() - timedelta(hours=1)
    old = [f"old{i:05}@example.org" for i in range(OLD)]
    subs.add_many(path, [Subscriber(email=e, state=SubscriberState.ACTIVE, subscribed=confirmed,
                                    confirmed=confirmed) for e in old])
    due_summary.forget_due(site.data, "news")
    newsletters.create(site.data, ["news"], "Edition 1", "Hello.\n")  # a ledger both sides rewrite
    secret = site.settings().secret
    ways = {"serve": Serve(site, tmp_path / "serve"), "cgi": Cgi(site, tmp_path / "install")}
    loop = CronLoop(site.root)
    answers: list[tuple[str, str, str, int, str, float]] = []  # way, what, email, status, page, s
    joined, left = set(), set()
    leaving = iter(old)

    def subscribe(way: str, email: str) -> None:
        began = time.monotonic()
        status, page = ways[way].post("/cgi/subscribe.py", urlencode(
            {"service": "news", "email": email, "name": "Load"}).encode())
        answers.append((way, "subscribe", email, status, message(page), time.monotonic() - began))

    def unsubscribe(way: str, email: str) -> None:
        began = time.monotonic()
        body = urlencode({"s": "news", "e": email,
                          "t": tokens.make(secret, "news", email, "unsubscribe")}).encode()
        status, page = ways[way].post("/cgi/unsubscribe.py", body)
        answers.append((way, "unsubscribe", email, status, message(page), time.monotonic() - began))

    def both(way: str, email: str) -> None:
        subscribe(way, email)
        # The line is written after the answer (web/joining.py): the person
        # leaves by a link of the letter, which comes once it is stored.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and subs.find(path, email) is None:
            time.sleep(0.02)
        unsubscribe(way, email)

    try:
        loop.start()
        while not loop.runs:
            time.sleep(0.05)
        for number in range(ROUNDS):
            jobs = []
            for way in ways:
                for i in range(PARALLEL):
                    email = f"{way}-{number}-{i}@example.org"
                    if i % 10 < 4:
                        jobs.append((subscribe, way, email))
                        joined.add(email)
                    elif i % 10 < 7:
                        email = next(leaving)
                        jobs.append((unsubscribe, way, email))
                        left.add(email)
                    else:
                        jobs.append((both, way, email))
                        left.add(email)
            with ThreadPoolExecutor(len(jobs)) as pool:
                for future in [pool.submit(*job) for job in jobs]:
                    future.result()
    finally:
        loop.stopping.set()
        loop.join(120)
        ways["serve"].stop()

    # A request may be refused while the file stays locked too long (503, "try
    # again"): the person is told, so it is neither lost nor resurrected — but
    # it is counted, and it must be a clean page.
    refused = [a for a in answers if a[3] == 503]
    broken = [a for a in answers if a[3] not in (200, 503)]
    assert not broken, f"{len(broken)} requests answered neither 200 nor 503, e.g. {broken[:3]}"
    assert all("Traceback" not in a[4] for a in answers)
    assert all("try again later" in a[4] for a in refused), refused[:3]
    assert len(refused) <= len(answers) // 10, f"{len(refused)} of {len(answers)} refused: {refused[:3]}"
    undecided = {a[2] for a in refused}
    # A subscribe post is answered before its line is written; a line that
    # could not be written then (the lock held too long) is said in pages.log,
    # and, like a 503, the request counts as not made.
    log = site.data.log / "pages.log"
    unstored = set(re.findall(r"subscribe: (\S+) could not be stored",
                              log.read_text(encoding="utf-8") if log.exists() else ""))
    assert len(refused) + len(unstored) <= len(answers) // 10, unstored
    undecided |= unstored
    joined -= undecided
    left -= undecided
    assert "Traceback" not in ways["serve"].stderr(), ways["serve"].stderr()[-3000:]
    assert all(r.code == 0 for r in loop.runs), [r.stderr for r in loop.runs if r.code]
    assert len(loop.runs) >= 2, "the sender did not run while the requests came in"
    assert_data_parses(site.data)
    present = subscriber_sets(site.data)["news"]
    lost = sorted((joined | set(old)) - left - present)
    back = sorted(left & present)
    print(f"subscribe load: {len(answers)} requests ({len(refused)} refused with 503, slowest "
          f"answer {max(a[5] for a in answers):.1f}s), "
          f"{len(loop.runs)} runs meanwhile, {len(lost)} lost, {len(back)} resurrected"
          + "".join(f"\n  refused: {a[:3]} {a[4][-160:]}" for a in refused[:5]))
    assert not lost, f"subscribers lost: {lost[:20]}"
    assert not back, f"unsubscribed addresses back in the file: {back[:20]}"

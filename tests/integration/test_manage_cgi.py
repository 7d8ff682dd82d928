"""The subscriber's own page as mod_cgi runs it: ``cgi/manage.py`` of a copied
installation started as its own process (see test_cgi.py), the link taken
from a letter the sender wrote to the outbox. And an erase killed with a
real SIGKILL in the middle of a big file set: every file is the old one or
the new one, never half, and a second erase finishes the job.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

from support.cgikit import SITE_URL, query_of, vykhukhol
from support.webtools import assert_clean_page, plain_text
from vykhukhol import services as svc
from vykhukhol.datadir import DataDir
from vykhukhol.files.runlog import RunLog
from vykhukhol.members import suppression
from vykhukhol.services import subscribers as subs
from vykhukhol.services.subscriber_line import HEADER, Subscriber
from vykhukhol.settings import load as load_settings
from vykhukhol.states import SubscriberState
from vykhukhol.timeutil import now

ANNA = "anna@example.org"
SAME_SITE = {"HTTP_SEC_FETCH_SITE": "same-origin"}


def test_the_page_under_cgi_from_a_real_letter(install):  # noqa: F811 - the fixture
    service = svc.find_service(install.data, "news")
    svc.edit_letter(service, 1, "Lesson 1", "0s", "Hello.\n\nYour lists: {{ manage_url }}\n")
    vykhukhol("--data", str(install.data_root), "subscriber", "add", "news", ANNA, "--name", "Anna",
              "--confirmed")
    vykhukhol("--data", str(install.data_root), "cron")
    letter = install.mails_to(ANNA)[-1]
    link = re.findall(r"https?://\S+/cgi/manage\.py\?\S+", plain_text(letter))[0]
    assert link.startswith(f"{SITE_URL}/cgi/manage.py?")

    page = install.run("cgi/manage.py", query=query_of(link))
    assert page.status == 200, page
    assert_clean_page(page)
    assert ANNA in page.body and "News" in page.body
    form = next(f for f in page.forms() if f.fields.get("action") == "leave")
    assert form.hidden["e"] == ANNA and form.hidden["t"]

    cross = install.run("cgi/manage.py", "POST", body=form.encoded(),
                        HTTP_SEC_FETCH_SITE="cross-site")
    assert cross.status == 403 and ANNA in install.subscribers()
    left = install.run("cgi/manage.py", "POST", body=form.encoded(), **SAME_SITE)
    assert left.status == 200, left
    assert ANNA not in install.subscribers()

    forged = install.run("cgi/manage.py", query=urlencode({"e": "bob@example.org",
                                                           "t": query_of(link)[-32:]}))
    assert forged.status == 400 and "bob@" not in forged.body and "News" not in forged.body

    asked = install.run("cgi/manage.py")
    assert asked.status == 200 and asked.forms()


# --- kill -9 during an erase ---------------------------------------------------------

SERVICES = 12
LINES = 20_000          # per service: ~1.5 MB each, so the erase takes a while
LOG_LINES = 8_000

ERASER = """
import sys
from vykhukhol.members import personal
from vykhukhol.datadir import DataDir
from vykhukhol.settings import load
from vykhukhol.timeutil import now
data = DataDir(sys.argv[1])
print("started", flush=True)
personal.erase(data, load(data.settings), sys.argv[2], now())
print("done", flush=True)
"""


def _big_site(root: Path) -> DataDir:
    cgi_dir = root.parent / "cgi"  # init renames the cron script it finds there
    cgi_dir.mkdir()
    (cgi_dir / "cron.py").write_text("# shipped cron script\n")
    vykhukhol("--data", str(root), "init", "--cgi-dir", str(cgi_dir), "--admin-email", "admin@example.org",
              "--password", "correct-horse-1", "--site-url", SITE_URL)
    data = DataDir(root)
    svc.add_db(data, "main")
    moment = now()
    for number in range(SERVICES):
        service = svc.add_service(data, f"list{number}", "main", {"title": f"List {number}"})
        lines = [Subscriber(f"user{i}@example.org", f"User {i}", SubscriberState.ACTIVE,
                            moment, moment).to_line() for i in range(LINES)]
        lines.insert(LINES // 2, Subscriber(ANNA, "Anna", SubscriberState.ACTIVE,
                                            moment, moment).to_line())
        service.subscribers_path.write_text(HEADER + "\n" + "\n".join(lines) + "\n")
    log = RunLog(data, "test")
    for i in range(LOG_LINES):
        log.write(f"line {i}: {ANNA if i % 100 == 0 else f'user{i}@example.org'} did something")
    return data


def _snapshot(data: DataDir) -> dict[str, bytes]:
    return {p.relative_to(data.root).as_posix(): p.read_bytes()
            for p in data.root.rglob("*") if p.is_file() and not p.name.endswith(".lock")}


def _without_anna(raw: bytes) -> bytes:
    return b"".join(line for line in raw.splitlines(keepends=True) if ANNA.encode() not in line)


def test_kill_9_during_an_erase_leaves_old_or_new_files_never_half(tmp_path):
    data = _big_site(tmp_path / "data")
    before = _snapshot(data)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "lib"))
    kills = 0
    for delay in (0.15, 0.3, 0.5, 0.8):
        eraser = subprocess.Popen([sys.executable, "-c", ERASER, str(data.root), ANNA],
                                  stdout=subprocess.PIPE, env=env)
        assert eraser.stdout.readline() == b"started\n"
        time.sleep(delay)
        if eraser.poll() is None:
            os.kill(eraser.pid, signal.SIGKILL)
            kills += 1
        eraser.wait()
        after = _snapshot(data)
        for name, raw in before.items():
            if name not in after:
                continue  # a temporary name is never one of the data files
            if name == "suppressed.txt":
                continue  # gains the hash: checked below
            assert after[name] in (raw, _without_anna(raw)), f"{name} is half written"
        # The hash is written first: the address is suppressed from the first kill on,
        # unless the kill came before the suppression list was written.
        if (data.root / "suppressed.txt").exists():
            assert suppression.is_suppressed(data, load_settings(data.settings).secret, ANNA)
    assert kills, "every erase finished before its kill: make the file set bigger"
    done = subprocess.run([sys.executable, "-c", ERASER, str(data.root), ANNA],
                          capture_output=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.endswith(b"done\n"), done.stderr
    for name, raw in _snapshot(data).items():
        if name != "suppressed.txt":
            assert ANNA.encode() not in raw, name
        if name.endswith("subscribers.txt"):
            assert raw == _without_anna(before[name]), name
    for number in range(SERVICES):
        path = svc.find_service(data, f"list{number}").subscribers_path
        assert sum(1 for _ in subs.subscribers(path)) == LINES

"""A subscribe post over the hourly cap does not pass for a run.

The cron watch took the run log's mtime for the last run, and a refused
subscribe post wrote its line to that log: one post every 50 minutes kept a
dead cron looking alive, and the first post over the cap even cancelled its
own alert. Page events now go to ``data/log/pages.log``; the run log is
written by runs alone (docs/using/alerts.md#cron-silent).

Through the real CGI script (tests/support/cgikit.py's install); the run
log's mtime is moved back, as a cron that stopped two hours ago leaves it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from urllib.parse import urlencode

from support.cgikit import install, vykhukhol  # noqa: F401
from support.servetools import subprocess_env
from vykhukhol.watch import cronwatch


def _post(install, email: str):  # noqa: F811
    body = urlencode({"service": "news", "email": email, "name": ""}).encode()
    return install.run("cgi/subscribe.py", method="POST", body=body, remote="203.0.113.9")


def _silence_alerts(install) -> list:  # noqa: F811
    return [m for m in install.mails_to("admin@example.org") if m["Subject"] == "cron is silent"]


def test_posts_over_the_cap_do_not_make_a_stopped_cron_look_alive(install):  # noqa: F811
    vykhukhol("--data", str(install.data_root), "settings", "set", "subscribe_hourly_limit", "1")
    assert install.run(install.cron_script()).status == 200  # the cron worked once
    assert _post(install, "own1@example.org").status == 200  # the one post the hour allows
    log = install.data.log / "run.log"
    then = time.time() - 2 * 3600
    os.utime(log, (then, then))  # then the cron stopped, two hours ago
    root = str(install.data_root)
    assert cronwatch.silence(root) is not None

    for n in range(2, 5):  # posts over the cap, each refused
        assert _post(install, f"own{n}@example.org").status == 200
        assert cronwatch.silence(root) is not None, "a refused post passed for a run"
    assert "own4@example.org" not in install.subscribers("news")
    assert len(_silence_alerts(install)) == 1  # the first refused post's page sent it
    assert abs(os.stat(log).st_mtime - then) < 1  # the run log saw no page
    assert "subscribe_hourly_limit" in (install.data.log / "pages.log").read_text()

    status = subprocess.run([sys.executable, "-m", "vykhukhol", "--data", root, "status",
                             "--cgi-dir", str(install.cgi)],
                            capture_output=True, text=True, timeout=120, env=subprocess_env())
    assert status.returncode == 1, status.stdout  # silent, for monitoring
    assert "over subscribe_hourly_limit" in status.stdout  # the pages' lines still shown

"""The cron that stopped (docs/using/alerts.md#cron-silent): when no run has started for
max(1 h, 3 × the median gap between the last 20 runs), the next page
request sends "cron is silent" after its answer (once in 6 hours), Status
shows the last run in red, and `vykhukhol status` exits 1.

Through real CGI processes (tests/support/cgikit.py's install) and the
real command line; the run log's mtime is moved back, as a cron that stopped
two hours ago would leave it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from support.servetools import subprocess_env
from vykhukhol.files import kv
from vykhukhol.watch import cronwatch


def _age_the_log(install, seconds: float) -> None:  # noqa: F811
    log = install.data.log / "run.log"
    then = time.time() - seconds
    os.utime(log, (then, then))


def _status(install) -> subprocess.CompletedProcess:  # noqa: F811
    return subprocess.run([sys.executable, "-m", "vykhukhol", "--data", str(install.data_root),
                           "status", "--cgi-dir", str(install.cgi)],
                          capture_output=True, text=True, timeout=120, env=subprocess_env())


def _silence_alerts(install) -> list:  # noqa: F811
    return [m for m in install.mails_to("admin@example.org") if m["Subject"] == "cron is silent"]


def test_a_page_tells_the_admin_once_when_the_cron_stopped(install):  # noqa: F811
    page = install.run(install.cron_script())  # one run: the cron worked once
    assert page.status == 200
    assert _status(install).returncode == 0
    assert install.run("cgi/subscribe.py", query="service=news").status == 200
    assert _silence_alerts(install) == []  # the cron ran a moment ago: nothing to say

    _age_the_log(install, 2 * 3600)  # then it stopped, two hours ago
    page = install.run("cgi/subscribe.py", query="service=news")
    assert page.status == 200 and "<form" in page.body  # the visitor's page as always
    [alert] = _silence_alerts(install)
    assert "cron" in alert.get_content()
    install.run("cgi/subscribe.py", query="service=news")  # a second page: no second letter
    install.run("cgi/confirm.py", query="s=news&e=x%40example.org&t=bad")
    assert len(_silence_alerts(install)) == 1

    status = _status(install)
    assert status.returncode == 1, status.stdout  # for monitoring
    assert "silent" in status.stdout and "cron job" in status.stdout

    install.run(install.cron_script())  # the cron is back
    assert _status(install).returncode == 0


def test_the_line_is_three_median_gaps_when_the_cron_is_slow(install):  # noqa: F811
    """A cron every 2 hours is not silent after 1 hour: the line is 3 × its pace."""
    install.run(install.cron_script())
    data = install.data
    kv.write_kv(data.state / "cron", {"median_gap": str(2 * 3600)})
    _age_the_log(install, 3 * 3600)
    assert cronwatch.silence(str(data.root)) is None
    assert cronwatch.line(str(data.root)) == 6 * 3600
    _age_the_log(install, 7 * 3600)
    assert cronwatch.silence(str(data.root)) > 6 * 3600


def test_a_full_run_notes_the_median_gap_of_the_runs_before(install):  # noqa: F811
    """The gaps come from the run log's "run ended" lines, idle ticks included."""
    data = install.data
    log = data.log / "run.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    times = ["2026-12-01T10:00:00Z", "2026-12-01T10:05:00Z", "2026-12-01T10:10:00Z",
             "2026-12-01T10:20:00Z", "2026-12-01T10:25:00Z"]
    log.write_text("".join(f"{t}\tlease{i}\tinfo\trun ended after 0.1s: all done; handed over 0\n"
                           for i, t in enumerate(times)) + "torn line\n", encoding="utf-8")
    cronwatch.note_gaps(data)
    assert kv.read_kv(data.state / "cron")["median_gap"] == "300"  # gaps 5, 5, 10, 5 minutes


def test_a_site_with_no_run_yet_has_no_cron_to_miss(install):  # noqa: F811
    assert not (install.data.log / "run.log").exists()
    assert cronwatch.silence(str(install.data.root)) is None
    install.run("cgi/subscribe.py", query="service=news")
    assert _silence_alerts(install) == []

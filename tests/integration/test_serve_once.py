"""One ``vykhukhol serve`` per data directory, a port change undone when it
stops, and the mode said where a newcomer looks.
Real ``serve`` subprocesses on loopback ports, stopped with SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from support.servetools import ServeProcess, subprocess_env
from vykhukhol.members import unsent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_cmd(site, port: int) -> list[str]:
    return [sys.executable, "-m", "vykhukhol", "--data", str(site.root), "serve", "--host",
            "127.0.0.1", "--port", str(port), "--no-ticker", "--cgi-dir", str(site.cgi_dir)]


def test_a_second_serve_on_the_same_data_refuses_and_changes_nothing(site, tmp_path: Path) -> None:
    first_port, second_port = free_port(), free_port()
    site.set(site_url=f"http://127.0.0.1:{first_port}")
    first = ServeProcess(site, first_port, tmp_path / "first")
    first.start()
    try:
        second = subprocess.run(serve_cmd(site, second_port), capture_output=True, text=True,
                                timeout=60, env=subprocess_env())
        assert second.returncode != 0
        assert "another `vykhukhol serve` is serving" in second.stderr
        assert f"pid {first.proc.pid} http://127.0.0.1:{first_port}" in second.stderr
        assert "Traceback" not in second.stderr
        assert site.settings()["site_url"] == f"http://127.0.0.1:{first_port}"
        with socket.socket() as probe:  # the second never took its port
            probe.bind(("127.0.0.1", second_port))
    finally:
        code, _, err = first.stop()
    assert code == 0, err
    # once the first has stopped, a serve starts again on the same data
    again = ServeProcess(site, second_port, tmp_path / "again")
    again.start()
    assert again.stop()[0] == 0


def test_a_port_change_is_put_back_when_serve_stops(site, tmp_path: Path) -> None:
    old, port = free_port(), free_port()
    site.set(site_url=f"http://127.0.0.1:{old}")
    served = ServeProcess(site, port, tmp_path / "serve")
    served.start()
    assert site.settings()["site_url"] == f"http://127.0.0.1:{port}"  # links reach this one
    code, out, err = served.stop()
    assert code == 0, err
    assert f"site_url is now http://127.0.0.1:{port}" in out
    assert site.settings()["site_url"] == f"http://127.0.0.1:{old}"
    assert not (site.data.state / "serving").exists()


def test_a_killed_serve_frees_the_data_for_the_next(site, tmp_path: Path) -> None:
    port = free_port()
    site.set(site_url=f"http://127.0.0.1:{port}")
    served = ServeProcess(site, port, tmp_path / "killed")
    served.start()
    os.kill(served.proc.pid, signal.SIGKILL)
    served.proc.wait()
    after = ServeProcess(site, free_port(), tmp_path / "after")
    after.start()  # the kernel freed the flock: no stale lock to clear by hand
    assert after.stop()[0] == 0


def test_serve_says_debug_mode_first_and_how_to_switch(fresh_site, tmp_path: Path) -> None:
    served = ServeProcess(fresh_site, free_port(), tmp_path / "serve")
    served.start()
    code, out, _ = served.stop()
    lines = out.splitlines()
    [mode] = [line for line in lines if line.startswith("mode: ")]
    assert "no letter goes to subscribers, not even confirmation requests" in mode
    assert lines.index(mode) <= 4
    assert any("vykhukhol mode working" in line for line in lines)
    assert any(line.startswith("mail: written to ") for line in lines)


def test_in_debug_a_confirmation_waits_and_goes_with_the_first_working_run(fresh_site) -> None:
    site = fresh_site
    site.service("news", letters=[("One", "0s", "Hello.")])
    assert site.subscribe("news", "ann@example.org") == "added"
    assert site.outbox() == []  # nothing leaves in debug
    assert [note.email for note in unsent.notes(site.data)] == ["ann@example.org"]
    site.run_at()  # a debug run sends nothing either
    assert [m for m in site.outbox() if "ann@" in str(m["To"])] == []
    site.ok("mode", "working")
    from datetime import timedelta

    from vykhukhol.timeutil import now
    site.run_at(now() + timedelta(seconds=unsent.UNSENT_GRACE + 1))
    [request] = [m for m in site.outbox() if "ann@" in str(m["To"])]
    assert "confirm.py?" in request.get_body(("plain",)).get_content()

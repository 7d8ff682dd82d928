"""What a subscribe post fsyncs, through the real CGI script (docs/design/startup.md#startup-fsyncs).

Each fsync waits for the disk; on a shared host that is the slowest part of
the whole post. The ones kept are those a crash would otherwise cost: the
new subscriber line (stored for good once the post is taken) and the letter
handed to the outbox with its folder. The note that its confirmation is
unsent (so the next run sends it when this process dies first) is written
but not fsynced: a killed process cannot take back a write, and the letter
is fsynced before the note is dropped. The caps' counters and the next-due
summary are rewritten atomically but not fsynced: a power cut may take back
their last change, which costs at most a few more posts let through or one
full read of the subscriber file by the next run.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest

from support.cgikit import parse_cgi

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names fds by /proc")

# The script run as itself, with every fsync's file written to FSYNC_LOG (the
# child that does the work after the answer inherits the wrapper), and each
# time whether the unsent note (UNSENT_NOTE) is there then.
COUNTED = """
import os, sys
log = os.open(os.environ["FSYNC_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
synced = os.fsync
def fsync(fd):
    noted = b" noted" if os.path.exists(os.environ["UNSENT_NOTE"]) else b""
    os.write(log, os.readlink(f"/proc/self/fd/{fd if isinstance(fd, int) else fd.fileno()}").encode()
             + noted + b"\\n")
    return synced(fd)
os.fsync = fsync
script = sys.argv[1]
sys.argv = [script]
with open(script, encoding="utf-8") as source:
    code = compile(source.read(), script, "exec")
exec(code, {"__name__": "__main__", "__file__": script})
"""


def post(install, body: bytes, log: Path):
    script = install.cgi / "subscribe.py"
    environ = {
        "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_NAME": "localhost", "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1", "REQUEST_METHOD": "POST", "SCRIPT_NAME": "/cgi/subscribe.py",
        "SCRIPT_FILENAME": str(script), "QUERY_STRING": "", "REMOTE_ADDR": "127.0.0.1",
        "PATH": os.environ["PATH"], "PYTHONPATH": str(install.root / "lib"),
        "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1", "FSYNC_LOG": str(log),
        "UNSENT_NOTE": str(install.data.state / "unsent-confirmations"),
        "CONTENT_TYPE": "application/x-www-form-urlencoded", "CONTENT_LENGTH": str(len(body))}
    done = subprocess.run(["python3", "-c", COUNTED, str(script)], env=environ, input=body,
                          capture_output=True, cwd=script.parent, timeout=60)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return parse_cgi(done.stdout, done.stderr)


def test_a_new_address_fsyncs_its_line_and_its_letter_not_its_unsent_note(install, tmp_path):
    time.sleep(1.1)  # the run below leaves the next-due summary, which the post keeps up
    install.run(install.cron_script())
    data = install.data
    assert (data.state / "due-news").exists()
    log = tmp_path / "fsyncs"
    page = post(install, urlencode({"service": "news", "email": "new@example.org"}).encode(), log)
    assert page.status == 200
    assert install.subscribers()["new@example.org"]
    letter, = [m for m in install.mails_to("new@example.org")]
    synced = log.read_text().splitlines()
    outbox = os.path.realpath(data.outbox)
    assert [re.sub(r"/\.[^/]*\.eml\.[0-9a-f]+\.tmp", "/<letter>", path) for path in synced] == [
        os.path.realpath(data.db("main") / "news" / "subscribers.txt"),
        f"{outbox}/<letter> noted", f"{outbox} noted"], synced  # the note is there till it went
    assert not (data.state / "unsent-confirmations").exists()
    assert "subscribes" in os.listdir(data.state) and "confirm-requests" in os.listdir(data.state)
    assert letter["Subject"]

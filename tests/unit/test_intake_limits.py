"""bounces/reading/limits.py: the limits on a message's raw bytes; bounces/tries.py:
which message a stopped reader is blamed for (the integration tests kill real readers)."""

from __future__ import annotations

from pathlib import Path

from vykhukhol.bounces import tries
from vykhukhol.bounces.reading import limits
from vykhukhol.datadir import DataDir

DATA = Path(__file__).resolve().parents[1] / "data" / "bounces"


def test_real_bounces_pass_and_each_limit_refuses_one_over_it():
    for path in DATA.iterdir():
        assert limits.refusal(path.read_bytes()) is None, path.name
    head = b"Subject: x\r\n\r\n"
    assert limits.refusal(b"x" * limits.MAX_BYTES) is not None  # one long line
    assert limits.refusal(head + b"a\n" * (limits.MAX_LINES - 2)) is None
    assert limits.refusal(head + b"a\n" * limits.MAX_LINES).startswith("too many lines")
    assert limits.refusal(head + b"y" * (limits.MAX_FIELD - 1)) is None
    assert limits.refusal(b"X: " + b"y" * limits.MAX_FIELD).startswith("a line (or header field)")
    folded = b"X: a\r\n" + b" b\r\n" * (limits.MAX_FIELD // 4)  # one field, folded
    assert limits.refusal(folded).startswith("a line (or header field)")
    containers = b"Content-Type: multipart/mixed; boundary=b\n\n" * limits.MAX_NESTING
    assert limits.refusal(containers) is None
    assert limits.refusal(containers + b"content-type:\n\tMESSAGE/rfc822\n\n").startswith(
        "MIME parts nested too deep")
    assert limits.refusal(b"--b\n" * (limits.MAX_PARTS - 1)) is None
    assert limits.refusal(b"--b\n" * limits.MAX_PARTS).startswith("too many MIME parts")


def test_only_the_message_a_stopped_reader_was_on_is_blamed(tmp_path):
    data = DataDir(tmp_path)
    for _ in range(2):  # two readers, each killed while on c after beginning a and b
        reader = tries.Tries(data, set())
        assert not reader.given_up("c")
        for mid in ("a", "b", "c"):
            reader.begin(mid)
        reader.close()
    after = tries.Tries(data, set())
    assert all(after.unfinished(mid) for mid in "abc")  # each is handled alone next time
    assert after.given_up("c") and not after.given_up("a") and not after.given_up("b")
    later = tries.Tries(data, {"a", "b", "c"})  # once they have results
    assert not any(later.unfinished(mid) or later.given_up(mid) for mid in "abc")


def test_a_reader_that_finished_its_last_message_blames_nothing(tmp_path):
    data = DataDir(tmp_path)
    reader = tries.Tries(data, set())
    reader.begin("c")  # killed on c
    reader.close()
    reader = tries.Tries(data, set())
    for mid in ("c", "d"):  # c alone, finished; then d, finished (the time was up after it)
        reader.begin(mid)
    reader.close()
    reader = tries.Tries(data, {"c", "d"})
    assert not reader.given_up("c") and not reader.unfinished("c")


def test_tries_are_cut_back_keeping_what_counts(tmp_path, monkeypatch):
    monkeypatch.setattr(tries, "TRIES_BYTES", 100)
    data = DataDir(tmp_path)
    for _ in range(2):
        reader = tries.Tries(data, set())
        for mid in [f"{n:016x}" for n in range(20)] + ["c" * 16]:
            reader.begin(mid)
        reader.close()
    done = {f"{n:016x}" for n in range(20)}
    tries.Tries(data, done)  # cuts the file back
    assert len(tries.tries_path(data).read_text().splitlines()) == 2
    assert tries.Tries(data, done).given_up("c" * 16)

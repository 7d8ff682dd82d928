"""``files.splice``: the changed byte ranges replaced, every other byte
copied, and the CRCs it reports, against a plain rebuild of the file, with
changes close together (read a stretch at a time) and far apart."""

from __future__ import annotations

import tempfile
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vykhukhol import files
from vykhukhol.files import rewrite


@st.composite
def cases(draw):
    """A file, non-overlapping changes of its lines, ``upto`` and marks."""
    lines = draw(st.lists(st.binary(min_size=1, max_size=12).map(lambda b: b + b"\n"),
                          min_size=1, max_size=40))
    content = b"".join(lines)
    starts = [sum(map(len, lines[:i])) for i in range(len(lines))]
    chosen = draw(st.lists(st.integers(0, len(lines) - 1), unique=True, max_size=len(lines)))
    changes = [(starts[i], lines[i], draw(st.binary(max_size=15))) for i in chosen]
    last_end = max((offset + len(old) for offset, old, _ in changes), default=0)
    upto = draw(st.integers(last_end, len(content)))
    new_upto = upto + sum(len(new) - len(old) for _, old, new in changes)
    marks = sorted(set(draw(st.lists(st.integers(0, new_upto), max_size=5))))
    return content, changes, upto, marks


def rebuilt(content: bytes, changes) -> bytes:
    out, at = [], 0
    for offset, old, new in sorted(changes):
        out += (content[at:offset], new)
        at = offset + len(old)
    return b"".join(out) + content[at:]


@settings(max_examples=300, deadline=None)
@given(cases(), st.sampled_from([7, 64, 1 << 20]))
def test_a_splice_is_the_file_rebuilt_with_its_changes(case, block):
    """``block`` small: many stretches and copies between them."""
    content, changes, upto, marks = case
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        patch.setattr(rewrite, "_COPY_BLOCK", block)
        path = Path(folder) / "subscribers.txt"
        path.write_bytes(content)
        done = files.splice(path, changes, upto=upto, marks=marks)
        expected = rebuilt(content, changes)
        assert path.read_bytes() == expected
        new_upto = upto + sum(len(new) - len(old) for _, old, new in changes)
        assert done.new_upto == new_upto
        assert done.old_crc == zlib.crc32(content[:upto])
        assert done.new_crc == zlib.crc32(expected[:new_upto])
        assert done.mark_crcs == [zlib.crc32(expected[:mark]) for mark in marks]


@settings(max_examples=100, deadline=None)
@given(cases(), st.sampled_from([7, 1 << 20]), st.data())
def test_a_splice_whose_old_bytes_moved_writes_nothing(case, block, data):
    content, changes, upto, marks = case
    if not changes:
        return
    wrong = data.draw(st.integers(0, len(changes) - 1))
    offset, old, new = changes[wrong]
    changes[wrong] = (offset, bytes([old[0] ^ 1]) + old[1:], new)  # not what the file holds
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        patch.setattr(rewrite, "_COPY_BLOCK", block)
        path = Path(folder) / "subscribers.txt"
        path.write_bytes(content)
        assert files.splice(path, changes, upto=upto, marks=marks) is None
        assert path.read_bytes() == content
        assert [p.name for p in Path(folder).iterdir()] == ["subscribers.txt"]

"""The two click files of a counted letter (docs/using/clicks.md#clicks), written and read here only.

In ``data/clicks/`` (:meth:`DataDir.click_file`), per letter:

* ``<letter>.links`` — the letter's links, one a line, line n being link n
  (at most :data:`MAX_LINKS`): ASCII ``http``/``https`` URLs without spaces
  (:mod:`vykhukhol.newsletters.clicks` %-encodes the rest). Written once,
  atomically, before the first of the letter's letters is made; never changed.
* ``<letter>.counts`` — one counter a link and hour,
  ``<hour>\\t<number>\\t<clicks>`` (the UTC hour, ``2026-12-01T09``),
  rewritten under the file's record lock at each click: the file grows with
  the hours a letter is clicked in, not with its clicks. A line of two
  fields, ``<hour>\\t<number>``, is one click (as older versions wrote a
  click); the next click folds such lines into counters. Nothing else: no
  address, no IP, no finer time.

Its two users: :mod:`vykhukhol.newsletters.clicks` (which links a letter
counts, the table written, the counts read back) and :mod:`vykhukhol.web.go`
(cgi/go.py: one link looked up, one click added). It sits in ``files/``, not
beside the first, because go.py's page may not load the newsletters
package's face (the jobs module, with dataclasses and typing); so it imports
nothing at the top but the files package, which every page has loaded already.
It does not choose, rewrite or sign links (newsletters.clicks, tokens).
"""

from __future__ import annotations

from vykhukhol import files

TYPE_CHECKING = False  # go.py's page: no typing module (test_import_budget)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import datetime

    from vykhukhol.datadir import DataDir

MAX_LINKS = 300  # links in one letter's table; a letter's links after these are not counted


def write_links(data: DataDir, letter: str, links: tuple[str, ...]) -> None:
    """The table of ``letter``: ``links`` in their numbers' order."""
    files.make_folder(data.clicks)
    files.atomic_write(data.click_file(letter, "links"), "".join(f"{url}\n" for url in links))


def read_links(data: DataDir, letter: str) -> tuple[str, ...] | None:
    """The stored links of ``letter``, link 1 first (None: none stored)."""
    text = files.read_text(data.click_file(letter, "links"))
    return None if text is None else tuple(line for line in text.split("\n") if line)


def link(data: DataDir, letter: str, number: int) -> str | None:
    """Link ``number`` of the letter's table, or None (no table, no such line,
    a line that is not such a link). Reads up to that line, no further."""
    try:
        with open(data.click_file(letter, "links"), encoding="ascii") as table:
            for index, line in enumerate(table, start=1):
                if index == number:
                    url = line.rstrip("\n")
                    # Written by write_links as ASCII http(s) without spaces; checked
                    # again, so a hand-edited file cannot make a header of anything else.
                    ok = url.lower().startswith(("http://", "https://")) and url.isprintable() \
                        and " " not in url
                    return url if ok else None
    except (OSError, UnicodeDecodeError):
        return None
    return None


def _counters(lines: Iterable[str]) -> dict[tuple[str, int], int]:
    """The clicks of each (hour, link) in ``lines``, in their first line's
    order; a line that cannot be read is passed over."""
    counted: dict[tuple[str, int], int] = {}
    for line in lines:
        hour, _, rest = line.strip().partition("\t")
        number, _, clicks = rest.partition("\t")
        if not number.isdigit() or not (clicks.isdigit() or clicks == ""):
            continue
        key = (hour, int(number))
        counted[key] = counted.get(key, 0) + (int(clicks) if clicks else 1)
    return counted


def add_click(data: DataDir, letter: str, number: int, moment: datetime) -> None:
    """One click of link ``number`` at ``moment`` (UTC): its hour's counter
    raised by one, the file rewritten atomically under the record lock, so
    concurrent CGI processes each add their click."""
    path = data.click_file(letter, "counts")
    with files.record_lock(path):
        counted = _counters(files.read_lines(path))
        key = (f"{moment:%Y-%m-%dT%H}", number)
        counted[key] = counted.get(key, 0) + 1
        files.atomic_write(path, [f"{hour}\t{link}\t{clicks}\n"
                                  for (hour, link), clicks in counted.items()])


def read_counts(data: DataDir, letter: str, size: int) -> list[int]:
    """The clicks of links 1 to ``size`` of ``letter`` (index 0: link 1); a
    line that cannot be read, or names no such link, is passed over."""
    clicks = [0] * size
    for (_, number), count in _counters(files.read_lines(data.click_file(letter, "counts"))).items():
        if 1 <= number <= size:
            clicks[number - 1] += count
    return clicks

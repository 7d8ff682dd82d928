"""Other tools' exports read as they write them: ``vykhukhol import-from`` and
the admin's "Import from another tool" (docs/using/import.md#import-from).

Each tool has its module (:mod:`.mailchimp`, :mod:`.phplist`,
:mod:`.listmonk`, :mod:`.csvfile`) that turns the file's bytes into a
:class:`Reading`: every record is either a :class:`Person` with a
:class:`Standing` or a refused line with the reason. Nothing is written while
a file is read, so a file that turns out not to be what was said changes
nothing. :func:`apply` then writes a whole reading: the suppressed first (one
append to the suppression list per reason), then the subscribers through
:func:`vykhukhol.importing.add_people`, the final write every import shares
(suppression skip, duplicates, the reminders of the unconfirmed).

The columns that match the site's fields fill them
(:mod:`vykhukhol.members.fieldmap`).

What it deliberately does not do: read a tool's API, keep the tool's tags,
lists or fields the site does not define, or mail anybody (an unconfirmed
import is asked to confirm by the sender's reminders, in its batches).
"""

from __future__ import annotations

from collections.abc import Callable

import vykhukhol.members.importers.csvfile as csvfile
import vykhukhol.members.importers.listmonk as listmonk
import vykhukhol.members.importers.mailchimp as mailchimp
import vykhukhol.members.importers.phplist as phplist
from vykhukhol.errors import BadInput
from vykhukhol.members.fieldmap import Columns
from vykhukhol.members.importers.parsing import MAX_BYTES, TooLarge
from vykhukhol.members.importers.verdicts import (  # noqa: F401 - the package's face
    SHOWN_REFUSED,
    Person,
    Reading,
    RefusedLine,
    Standing,
)

_READERS: dict[str, Callable[..., tuple[list[Person], list[RefusedLine]]]] = {"mailchimp": mailchimp.read, "phplist": phplist.read, "listmonk": listmonk.read,
            "csv": csvfile.read}
TOOLS = tuple(_READERS)


def read(tool: str, raw: bytes, name: str = "", max_bytes: int | None = None,
         columns: Columns | None = None) -> Reading:
    """The file's bytes as ``tool`` writes its export; :class:`BadInput` (one
    clear sentence, nothing read) when it is not that, or not text;
    :class:`TooLarge` when it, or what its zip inflates to, is over
    ``max_bytes`` (None: :data:`MAX_BYTES`, the command line's cap).
    ``columns``: the site's fields and the ``--map`` choices (None: no
    field is filled), :mod:`vykhukhol.members.fieldmap`."""
    if tool not in TOOLS:
        raise BadInput("unknown tool {tool}: one of {tools}", tool=tool, tools=", ".join(TOOLS))
    limit = MAX_BYTES if max_bytes is None else max_bytes
    if len(raw) > limit:
        raise TooLarge("the file is larger than {size} MiB; nothing was imported",
                       size=limit // (1024 * 1024))
    columns = columns or Columns()
    if tool == "mailchimp":  # the one export that comes zipped: the cap is on what it inflates to
        people, refused = mailchimp.read(raw, name, max_bytes, columns)
    else:
        people, refused = _READERS[tool](raw, name, columns)
    columns.check_met()
    return Reading(tool, people, refused, columns)

"""listmonk's subscribers export, as listmonk writes it.

Subscribers → Export writes (cmd/subscribers.go, handleExportSubscribers) the
header ``uuid,email,name,attributes,status,created_at,updated_at`` with Go's
csv writer: ``attributes`` is the subscriber's JSON object, ``status`` is
``enabled``, ``disabled`` or ``blocklisted``, the times are Go's
``time.Time.String()`` ("2024-01-15 10:30:00.123456 +0000 UTC").

``enabled`` → confirmed (signed up at ``created_at``), ``blocklisted`` →
suppressed as blocklisted, ``disabled`` is refused (listmonk does not write
to them, and nothing says they left). listmonk keeps double opt-in per list,
not in this file; a ``subscription_status`` column (``unconfirmed``,
``confirmed``, ``unsubscribed``), if the file has one, decides instead.
The name is ``name``, else the attributes' first and last name; the
attributes' keys fill the site's fields (:mod:`vykhukhol.members.fieldmap`). Who left is
dated by ``updated_at``, listmonk's time of the last change (the blocklisting
or the unsubscribe).
"""

from __future__ import annotations

import json

import vykhukhol.members.importers.parsing as parsing
import vykhukhol.members.importers.verdicts as verdicts
from vykhukhol.errors import BadInput
from vykhukhol.members.fieldmap import Columns

HEADER = ("uuid", "email", "name", "attributes", "status", "created_at", "updated_at")


def read(raw: bytes, name: str, columns: Columns) -> tuple[list[verdicts.Person], list[verdicts.RefusedLine]]:
    header, records = parsing.rows(parsing.text_of(raw), ",")
    if not all(parsing.column(header, cell) for cell in ("email", "status", "attributes")):
        raise parsing.expected(parsing._("listmonk's subscribers export"), ",".join(HEADER), header)
    by_list = parsing.column(header, "subscription_status")
    rows = list(records)
    attributes = [_attributes(row.cells.get("attributes", "")) for row in rows]
    # the attributes' keys are the columns that fill the site's fields
    keys = list(dict.fromkeys(key for found in attributes for key in found))
    mapping = columns.map(keys, tuple(k for k in keys if k.lower() in _NAME_KEYS))
    judged = []
    for row, attrs in zip(rows, attributes, strict=True):
        cells = row.cells
        status = cells.get(by_list, "") if by_list else ""
        if not status:
            status = cells.get("status", "")
            found = (BadInput("disabled in listmonk: it writes nothing to them, and nothing says "
                              "they left") if status.strip().lower() == "disabled"
                     else verdicts.by_status(status))
        else:
            found = verdicts.by_status(status)
        standing, why = (found, None) if isinstance(found, BadInput) else found
        signed = parsing.when(cells.get("created_at", ""))
        judged.append(verdicts.person(row, "", cells.get("email", ""),
                                      cells.get("name", "") or _named(cells.get("attributes", "")),
                                      standing, subscribed=signed, confirmed=signed, why=why,
                                      left=parsing.when(cells.get("updated_at", "")),
                                      values=columns.values(mapping, attrs)))
    return verdicts.sorted_out(judged)


def _attributes(text: str) -> dict[str, str]:
    """The attributes' JSON object as text values by key: a number as
    written, true/false as yes/no, a list or an object as its JSON (which no
    field but a text one takes); none when it is not an object."""
    try:
        values = json.loads(text) if text.strip() else {}
    except ValueError:
        return {}
    if not isinstance(values, dict):
        return {}
    out = {}
    for key, value in values.items():
        if isinstance(value, bool):
            out[str(key)] = "yes" if value else "no"
        elif isinstance(value, (int, float, str)):
            out[str(key)] = str(value)
        elif value is not None:
            out[str(key)] = json.dumps(value, ensure_ascii=False)
    return out


_NAME_KEYS = ("first_name", "fname", "last_name", "lname", "name")  # what _named reads


def _named(attributes: str) -> str:
    """A name from the attributes' JSON object (first_name/last_name, name)."""
    try:
        values = json.loads(attributes) if attributes.strip() else {}
    except ValueError:
        return ""
    if not isinstance(values, dict):
        return ""
    lower = {str(k).lower(): v for k, v in values.items() if isinstance(v, str)}
    return parsing.full_name(lower.get("first_name", lower.get("fname", "")),
                             lower.get("last_name", lower.get("lname", ""))) or lower.get("name", "")

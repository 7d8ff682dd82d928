"""A plain CSV from any other tool, or made by hand.

A header row is required, with an ``email`` column (``Email Address``,
``e-mail`` alike) and, if the file has them: ``name`` or ``first_name`` and
``last_name`` (FNAME/LNAME alike), ``status`` (subscribed, confirmed,
enabled, active → confirmed; unconfirmed, pending → unconfirmed;
unsubscribed → suppressed as unsubscribed; cleaned, bounced → suppressed as
gone; blocklisted, blacklisted → suppressed as blocklisted), ``subscribed``
(or ``created_at``, ``optin_time``), ``confirmed`` (``confirm_time``) and
``unsubscribed_at`` (``unsub_time``, ``clean_time``: when who left did). An
empty status cell is no status.
Other columns fill the site's fields by their names or labels
(:mod:`vykhukhol.members.fieldmap`), a ``language`` column the reader's language;
a value this site's export defused (a leading ``'``) is read as it was stored.
Without a status column everyone is unconfirmed: the file does not prove
they agreed, so the sender's reminders ask them. ``;`` separates the cells
when the first line has more of them than commas (Russian Excel's CSV).
"""

from __future__ import annotations

import vykhukhol.members.importers.parsing as parsing
import vykhukhol.members.importers.verdicts as verdicts
from vykhukhol.members.export import undefused
from vykhukhol.members.fieldmap import Columns


def read(raw: bytes, name: str, columns: Columns) -> tuple[list[verdicts.Person], list[verdicts.RefusedLine]]:
    text = parsing.text_of(raw)
    first = text.split("\n", 1)[0]
    delimiter = ";" if first.count(";") > first.count(",") else ","
    header, records = parsing.rows(text, delimiter)
    email = parsing.column(header, "email", "Email Address", "e-mail", "mail")
    if email is None:
        raise parsing.expected(parsing._("a CSV with a header row"), "email (required), name or first_name and last_name, "
                               "status, subscribed, confirmed — a header row first", header)
    whole = parsing.column(header, "name", "full name")
    first_name = parsing.column(header, "first_name", "FNAME", "first name")
    last_name = parsing.column(header, "last_name", "LNAME", "last name")
    status = parsing.column(header, "status")
    signed_col = parsing.column(header, "subscribed", "created_at", "optin_time", "signed_up")
    confirm_col = parsing.column(header, "confirmed", "confirmed_at", "confirm_time")
    left_col = parsing.column(header, "unsubscribed_at", "unsub_time", "clean_time", "left_at")
    mapping = columns.map(header, (email, whole, first_name, last_name, status, signed_col,
                                   confirm_col, left_col))
    judged = []
    for row in records:
        cells = row.cells
        found = verdicts.by_status(cells.get(status, "")) if status else (verdicts.Standing.UNCONFIRMED, None)
        standing, why = (found, None) if not isinstance(found, tuple) else found
        person_name = parsing.full_name(parsing.cell(cells, first_name), parsing.cell(cells, last_name))
        signed = parsing.when(parsing.cell(cells, signed_col))
        confirmed = parsing.when(parsing.cell(cells, confirm_col)) or signed
        judged.append(verdicts.person(row, "", cells.get(email, ""),
                                      parsing.cell(cells, whole) or person_name, standing,
                                      subscribed=signed, confirmed=confirmed, why=why,
                                      left=parsing.when(parsing.cell(cells, left_col)),
                                      values=columns.values(mapping, {
                                          k: undefused(v) for k, v in cells.items()})))
    return verdicts.sorted_out(judged)

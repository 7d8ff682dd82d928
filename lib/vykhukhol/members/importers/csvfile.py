"""A plain CSV from any other tool, or made by hand.

A header row is required, with an ``email`` column (``Email Address``,
``e-mail`` alike) and, if the file has them: ``name`` or ``first_name`` and
``last_name`` (FNAME/LNAME alike), ``status`` (subscribed, confirmed,
enabled, active → confirmed; unconfirmed, pending → unconfirmed;
unsubscribed → suppressed as unsubscribed; cleaned, bounced → suppressed as
gone; blocklisted, blacklisted → suppressed as blocklisted), ``subscribed``
(or ``created_at``, ``optin_time``) and ``confirmed`` (``confirm_time``).
Without a status column everyone is unconfirmed: the file does not prove
they agreed, so the sender's reminders ask them. ``;`` separates the cells
when the first line has more of them than commas (Russian Excel's CSV).
"""

from __future__ import annotations

import vykhukhol.members.importers.common as base


def read(raw: bytes, name: str) -> tuple[list[base.Person], list[base.RefusedLine]]:
    text = base.text_of(raw)
    first = text.split("\n", 1)[0]
    delimiter = ";" if first.count(";") > first.count(",") else ","
    header, records = base.rows(text, delimiter)
    email = base.column(header, "email", "Email Address", "e-mail", "mail")
    if email is None:
        raise base.expected(base._("a CSV with a header row"), "email (required), name or first_name and last_name, "
                            "status, subscribed, confirmed — a header row first", header)
    whole = base.column(header, "name", "full name")
    first_name = base.column(header, "first_name", "FNAME", "first name")
    last_name = base.column(header, "last_name", "LNAME", "last name")
    status = base.column(header, "status")
    signed_col = base.column(header, "subscribed", "created_at", "optin_time", "signed_up")
    confirm_col = base.column(header, "confirmed", "confirmed_at", "confirm_time")
    verdicts = []
    for row in records:
        cells = row.cells
        found = base.by_status(cells.get(status, "")) if status else (base.Standing.UNCONFIRMED, None)
        standing, why = (found, None) if not isinstance(found, tuple) else found
        person_name = base.full_name(base.cell(cells, first_name), base.cell(cells, last_name))
        signed = base.when(base.cell(cells, signed_col))
        confirmed = base.when(base.cell(cells, confirm_col)) or signed
        verdicts.append(base.person(row, "", cells.get(email, ""),
                                    base.cell(cells, whole) or person_name, standing,
                                    subscribed=signed, confirmed=confirmed, why=why))
    return base.sorted_out(verdicts)

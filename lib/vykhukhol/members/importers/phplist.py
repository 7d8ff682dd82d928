"""phpList 3's subscriber export, as phpList writes it.

Subscribers → Export (admin/actions/export.php) writes a tab-separated file
(comma-separated where ``EXPORT_EXCEL`` is set) whose header is the chosen
columns of the user table by their labels in admin/structure.php — "Email",
"Is this subscriber confirmed", "Is this subscriber blacklisted", "Did this
subscriber manually confirm", "Number of bounces", "Entered", "Last
Modified", "Is this account disabled?", … — then the chosen attributes by
their names ("First Name", "Last Name" …), then "List Membership". Every
field is followed by the separator, so each line has one empty cell before
the lists. Times are the server's ("2024-03-01 09:05:00"), read as UTC.

Blacklisted (phpList's unsubscribe) → suppressed as unsubscribed, dated by
"Last Modified" (the blacklisting is the record's last change); confirmed
→ confirmed; not confirmed → unconfirmed; a disabled account is refused.
"""

from __future__ import annotations

import vykhukhol.members.importers.parsing as parsing
import vykhukhol.members.importers.verdicts as verdicts
from vykhukhol.errors import BadInput
from vykhukhol.members.fieldmap import Columns
from vykhukhol.members.suppression import Why

EMAIL = "Email"
CONFIRMED = "Is this subscriber confirmed"
BLACKLISTED = "Is this subscriber blacklisted"
DISABLED = "Is this account disabled?"
ENTERED = "Entered"
MODIFIED = "Last Modified"


def _yes(text: str) -> bool:
    return text.strip().lower() in ("1", "yes", "true", "y")


def read(raw: bytes, name: str, columns: Columns) -> tuple[list[verdicts.Person], list[verdicts.RefusedLine]]:
    text = parsing.text_of(raw)
    first = text.split("\n", 1)[0]
    delimiter = "\t" if first.count("\t") >= first.count(",") else ","
    header, records = parsing.rows(text, delimiter)
    email = parsing.column(header, EMAIL)
    confirmed = parsing.column(header, CONFIRMED)
    blacklisted = parsing.column(header, BLACKLISTED)
    if email is None or confirmed is None or blacklisted is None:
        raise parsing.expected(parsing._("phpList 3's subscriber export"), f'"{EMAIL}", "{CONFIRMED}" and "{BLACKLISTED}" (tick '
                               "them when exporting), tab- or comma-separated", header)
    disabled = parsing.column(header, DISABLED)
    entered = parsing.column(header, ENTERED)
    modified = parsing.column(header, MODIFIED)
    first_name = parsing.column(header, "First Name", "Firstname", "FNAME")
    last_name = parsing.column(header, "Last Name", "Lastname", "Surname", "LNAME")
    whole = parsing.column(header, "Name", "Full Name")
    # the attributes fill the site's fields by their names (the address, the
    # states and the times are phpList's own columns, read above)
    mapping = columns.map(header, (email, confirmed, blacklisted, disabled, entered, modified,
                                   first_name, last_name, whole))
    judged = []
    for row in records:
        cells = row.cells
        standing: verdicts.Standing | BadInput
        why: Why | None
        if _yes(cells.get(blacklisted, "")):
            standing, why = verdicts.Standing.SUPPRESSED, Why.UNSUBSCRIBED
        elif disabled and _yes(cells.get(disabled, "")):
            standing, why = BadInput("a disabled account in phpList"), None
        elif _yes(cells.get(confirmed, "")):
            standing, why = verdicts.Standing.CONFIRMED, None
        else:
            standing, why = verdicts.Standing.UNCONFIRMED, None
        person_name = parsing.full_name(parsing.cell(cells, first_name), parsing.cell(cells, last_name))
        signed = parsing.when(parsing.cell(cells, entered))
        judged.append(verdicts.person(row, "", cells.get(email, ""),
                                      person_name or parsing.cell(cells, whole), standing,
                                      subscribed=signed, confirmed=signed, why=why,
                                      left=parsing.when(parsing.cell(cells, modified)),
                                      values=columns.values(mapping, cells)))
    return verdicts.sorted_out(judged)

"""Mailchimp's audience export, as Mailchimp writes it.

"Export Audience" gives a zip of CSV files, one per status:
``subscribed_members_export_<id>.csv``, ``unsubscribed_members_export_<id>.csv``,
``cleaned_members_export_<id>.csv`` (and ``nonsubscribed_…`` for contacts who
never opted in). Each file has the audience's fields by their labels
("Email Address", "First Name", "Last Name", …) and then Mailchimp's own
columns: MEMBER_RATING, OPTIN_TIME, OPTIN_IP, CONFIRM_TIME, CONFIRM_IP, …,
LEID, EUID, NOTES, TAGS; the unsubscribed file has UNSUB_TIME,
UNSUB_CAMPAIGN_TITLE, UNSUB_CAMPAIGN_ID, UNSUB_REASON, UNSUB_REASON_OTHER and
the cleaned one CLEAN_TIME, CLEAN_CAMPAIGN_TITLE, CLEAN_CAMPAIGN_ID where the
subscribed one has LAST_CHANGED. Times are UTC, "2024-03-01 09:05:00".

A single CSV of the zip is taken too: its status comes from its name, or
else from those columns. Subscribed → confirmed (OPTIN_TIME is the sign-up,
CONFIRM_TIME the opt-in), unsubscribed → suppressed as unsubscribed, cleaned
(hard bounces, repeated soft ones) → suppressed as gone, each dated by its
UNSUB_TIME or CLEAN_TIME; non-subscribed contacts never agreed to anything
and are refused. The merge fields fill the site's fields by their labels
(:mod:`vykhukhol.members.fieldmap`).
"""

from __future__ import annotations

import vykhukhol.members.importers.parsing as parsing
import vykhukhol.members.importers.verdicts as verdicts
from vykhukhol.errors import BadInput
from vykhukhol.members.fieldmap import Columns
from vykhukhol.members.suppression import Why

MAGIC_ZIP = b"PK\x03\x04"
_KINDS = ("nonsubscribed", "unsubscribed", "subscribed", "cleaned")  # "subscribed" after its longer kin


def read(raw: bytes, name: str, max_bytes: int | None = None, columns: Columns | None = None
         ) -> tuple[list[verdicts.Person], list[verdicts.RefusedLine]]:
    """``max_bytes``: the most a zip's CSV files may inflate to, together
    (None: :data:`parsing.MAX_BYTES`)."""
    if raw.startswith(MAGIC_ZIP):
        files = _unzipped(raw, parsing.MAX_BYTES if max_bytes is None else max_bytes)
    else:
        files = [(name, raw)]
    judged: list = []
    for member, data in files:
        judged.extend(_one_file(member, parsing.text_of(data), len(files) > 1,
                                columns or Columns()))
    return verdicts.sorted_out(judged)


def _unzipped(raw: bytes, max_bytes: int) -> list[tuple[str, bytes]]:
    """The zip's CSV files, at most ``max_bytes`` together once inflated: their
    sizes checked before anything is inflated (a small zip may unpack into
    gigabytes), and what each inflates to counted, since the sizes may lie."""
    import io
    import zipfile

    def too_large() -> parsing.TooLarge:
        return parsing.TooLarge("the zip's CSV files are larger than {size} MiB together; "
                                "nothing was imported", size=max_bytes // (1024 * 1024))

    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
        members = [info for info in archive.infolist()
                   if not info.is_dir() and info.filename.lower().endswith(".csv")]
        if not members:
            raise BadInput("the zip holds no CSV file; Mailchimp's audience export holds "
                           "subscribed_members_export_….csv and the like. Nothing was imported")
        if sum(info.file_size for info in members) > max_bytes:
            raise too_large()
        out, left = [], max_bytes
        for info in members:
            with archive.open(info) as handle:
                data = handle.read(left + 1)
            if len(data) > left:
                raise too_large()
            left -= len(data)
            out.append((info.filename.rsplit("/", 1)[-1], data))
        return out
    except (zipfile.BadZipFile, EOFError, NotImplementedError, ValueError) as exc:
        raise BadInput("the zip cannot be read ({reason}); nothing was imported",
                       reason=str(exc)) from None


def _kind(name: str, header: list[str]) -> str:
    lower = name.lower().rsplit("/", 1)[-1]
    for kind in _KINDS:
        if lower.startswith(kind + "_"):
            return kind
    if parsing.column(header, "UNSUB_TIME"):
        return "unsubscribed"
    if parsing.column(header, "CLEAN_TIME"):
        return "cleaned"
    return "subscribed"


def _one_file(name: str, text: str, several: bool, columns: Columns) -> list:
    header, records = parsing.rows(text, ",", name if several else "")
    email = parsing.column(header, "Email Address")
    if email is None or not (parsing.column(header, "OPTIN_TIME", "LEID", "EUID", "MEMBER_RATING")):
        raise parsing.expected(parsing._("Mailchimp's audience export"), '"Email Address" with MEMBER_RATING, OPTIN_TIME, '
                               "CONFIRM_TIME, LEID and EUID (and UNSUB_TIME or CLEAN_TIME in the "
                               "unsubscribed and cleaned files)", header)
    kind = _kind(name, header)
    first = parsing.column(header, "First Name", "FNAME")
    last = parsing.column(header, "Last Name", "LNAME")
    whole = parsing.column(header, "Name", "Full Name")
    verdict: dict[str, tuple[verdicts.Standing | BadInput, Why | None]] = {
        "subscribed": (verdicts.Standing.CONFIRMED, None),
        "unsubscribed": (verdicts.Standing.SUPPRESSED, Why.UNSUBSCRIBED),
        "cleaned": (verdicts.Standing.SUPPRESSED, Why.GONE),
        "nonsubscribed": (BadInput("a non-subscribed contact in Mailchimp: they never agreed "
                                   "to receive letters"), None),
    }
    standing, why = verdict[kind]
    where = name if several else ""
    # the merge fields are written by their labels ("City"): they fill the site's fields
    mapping = columns.map(header, (email, first, last, whole))
    out = []
    for row in records:
        cells = row.cells
        name_text = parsing.full_name(cells.get(first, "") if first else "",
                                       cells.get(last, "") if last else "") if first or last else ""
        optin = parsing.when(cells.get("OPTIN_TIME", ""))
        confirm = parsing.when(cells.get("CONFIRM_TIME", ""))
        out.append(verdicts.person(row, where, cells.get(email, ""),
                                   name_text or parsing.cell(cells, whole), standing,
                                   subscribed=optin or confirm, confirmed=confirm or optin, why=why,
                                   ip=cells.get("CONFIRM_IP") or cells.get("OPTIN_IP") or "",
                                   left=parsing.when(cells.get("UNSUB_TIME") or cells.get("CLEAN_TIME")
                                                     or ""),
                                   values=columns.values(mapping, cells)))
    return out

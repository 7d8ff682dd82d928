"""A subscribe post's work after its answer (docs/using/subscriber-pages.md#confirmation-cap).

The page answers a valid post before it reads the service's subscriber file:
what it does first (the form, the service, the settings, one count of the
client's hourly cap) costs the same wherever the address lies in the file,
or whether it is there at all. Looking the address up, storing it and
mailing the confirmation (:func:`vykhukhol.members.membership.subscribe`)
run after the answer, as the own page's link request does
(:mod:`vykhukhol.web.manage`). The visitor's page says "check your mailbox"
either way, so it never waited on anything that told one address from another.

This module is imported only by that work: the answer pays for none of it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported: a subscribe post pays for every import
if TYPE_CHECKING:
    from vykhukhol.datadir import DataDir
    from vykhukhol.settings import Settings


def join(data: DataDir, settings: Settings, service: str, address: str, name: str,
         client: str, allowed: bool, fields: dict[str, str | None] | None = None, *,
         language: str | None = None) -> None:
    """Store ``address`` in ``service`` (with the values of the site's
    ``fields`` its form asked for) and mail its confirmation, as the post
    asked; ``allowed`` is what the hourly cap said before the answer (the post
    was counted then, whatever follows). A failure goes to the pages' log: the
    page is gone, and the visitor may post again. ``language``: the reader's
    own, as the post gave it (docs/using/languages.md#reader-language)."""
    from vykhukhol.errors import VykhukholError

    if not allowed:
        _log(data, f"subscribe: {client or '?'} is over subscribe_hourly_limit "
                   f"({settings['subscribe_hourly_limit']} an hour): {address} was not stored "
                   f"and no confirmation was sent for {service}")
        return
    from vykhukhol.members import membership
    from vykhukhol.web.bots import Gate  # the per-address cap and the alarm's hold

    try:
        membership.subscribe(data, settings, service, address, name, ip=client or "-",
                             hold=Gate(data, settings).hold, fields=fields, language=language)
    except VykhukholError as exc:
        _log(data, f"subscribe: {address} could not be stored in {service}: {exc.message}", "error")


def _log(data: DataDir, line: str, level: str = "info") -> None:
    """One line of the pages' log (imported only for one: a post that goes
    well writes none)."""
    from vykhukhol.files.runlog import page_log

    page_log(data).write(line, level)

"""Who a letter is from: the site's mail domain, a service's From name and
address, and the tagged envelope sender of one letter
(docs/reference/transports.md#transports-envelope).

Apart from :mod:`.compose` because the confirmation request that a subscribe
post writes (:mod:`.confirm_letter`) needs them without Jinja2, which
``compose`` imports for every other letter.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from vykhukhol import returntag

TYPE_CHECKING = False  # typing is not imported: a subscribe post pays for every import
if TYPE_CHECKING:
    from vykhukhol.services import Service
    from vykhukhol.settings import Settings


def site_domain(settings: Settings) -> str:
    """The host of ``site_url``, or ``localhost`` when it is no name: the demo
    a local ``serve`` makes is at http://127.0.0.1, and a From of
    vykhukhol@127.0.0.1 is no address a mail program accepts."""
    host = urlsplit(settings["site_url"]).hostname or ""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return host or "localhost"
    return "localhost"


def sender_of(service: Service | None, settings: Settings) -> tuple[str, str]:
    """(display name, address) a letter goes out from."""
    address = (service.from_email if service else "") or settings["mail.from_email"] \
        or f"vykhukhol@{site_domain(settings)}"
    name = (service.from_name if service else "") or (service.title if service else "Vykhukhol")
    return name, address


def bounce_address(service: Service | None, settings: Settings, kind: str, name: str,
                   email: str, made: str | None = None) -> str:
    """The envelope sender of one letter to ``email``: ``mail.bounce_address`` or
    the letter's From address, with the signed tag of ``kind`` (``returntag.SERVICE``
    or ``returntag.NEWSLETTER``) and ``name`` (the service's or the job's), or the
    tag ``made`` already (the letter's X-Vykhukhol-Tag)."""
    base = settings["mail.bounce_address"] or sender_of(service, settings)[1]
    return returntag.bounce_address(base, settings["mail.verp_separator"],
                                    made or returntag.make(settings.secret, kind, name, email))

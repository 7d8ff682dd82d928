"""Whether a provider's callbacks have gone quiet: letters go through a
provider's SMTP host, yet none of its callbacks came in :data:`QUIET_DAYS`
days (the status page asks the owner to check the webhook)."""

from __future__ import annotations

import re

from vykhukhol import files
from vykhukhol.bounces import record
from vykhukhol.bounces.providers import PROVIDERS
from vykhukhol.timeutil import now, parse_time

# The SMTP hosts of the providers: sending through one, the bounces come by callback.
PROVIDER_HOSTS = {"ses": re.compile(r"email-smtp\.[a-z0-9-]+\.amazonaws\.com"),
                  "postmark": re.compile(r"smtp(-broadcasts)?\.postmarkapp\.com"),
                  "mailgun": re.compile(r"smtp(\.eu)?\.mailgun\.org"),
                  "sendgrid": re.compile(r"smtp\.sendgrid\.net")}
QUIET_DAYS = 7  # a provider's callbacks silent this long: the status page asks to check them


def provider_of(smtp_host: str) -> str | None:
    """The provider whose SMTP host this is, or None."""
    host = smtp_host.strip().lower().rstrip(".")
    return next((name for name, pattern in PROVIDER_HOSTS.items() if pattern.fullmatch(host)), None)


def quiet_provider(data, settings) -> str | None:
    """The provider letters go through when none of the providers' callbacks
    has come in :data:`QUIET_DAYS` days (a refused one does not count), else None."""
    from datetime import timedelta

    provider = provider_of(settings["mail.smtp_host"]) if settings["mail.transport"] == "smtp" else None
    if provider is None:
        return None
    since = now() - timedelta(days=QUIET_DAYS)
    log = record.log_path(data)
    for path in (log, log.with_name(log.name + ".1")):
        for line in files.read_lines(path):
            parts = line.split("\t")
            if len(parts) == 7 and parts[5] in PROVIDERS and parts[2] != "callback refused":
                try:
                    at = parse_time(parts[0])
                    if at is not None and at >= since:
                        return None
                except Exception:  # noqa: BLE001 - a torn line
                    continue
    return provider

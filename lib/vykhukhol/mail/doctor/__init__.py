"""The deliverability preflight (``vykhukhol doctor``, the admin's
Deliverability page; docs/deliverability/doctor.md#doctor): what Gmail, Yahoo and Outlook will
check of this site's letters, asked of the DNS before they ask it.

For the From domain of every service: SPF, DKIM, DMARC with alignment, the
MX of the bounce address's domain, ``site_url`` on https and one-click
unsubscribe. Each :class:`Finding` is ok, warning, wrong or unknown (the
resolver did not answer), with what was found and the fix in one sentence,
in the page's language. Nothing here changes anything or sends a letter.

The checks are in :mod:`.checks`, SPF's reading in :mod:`.spf`, the DNS
questions in :mod:`.lookup` (dnspython, imported only when asked).
"""

from __future__ import annotations

from vykhukhol.mail.doctor.finding import Finding, Verdict

__all__ = ["Finding", "Verdict", "examine", "worst"]


def examine(data, settings, lang: str = "en", lookup=None) -> list[Finding]:
    """Every check, in the order a person fixes them (DNS first, then the
    site's own settings). ``lookup``: a :class:`.lookup.Lookup` (tests give
    their own); by default one to ``dns.resolver`` or the system's."""
    from vykhukhol.mail.doctor import checks  # with mail.dkim: off the command line's start
    from vykhukhol.mail.doctor.lookup import Lookup

    if lookup is None:
        lookup = Lookup(settings["dns.resolver"])
    return checks.all_checks(data, settings, lang, lookup)


def worst(findings: list[Finding]) -> Verdict:
    """The worst verdict of ``findings`` (wrong, unknown, warning, ok)."""
    for verdict in (Verdict.WRONG, Verdict.UNKNOWN, Verdict.WARNING):
        if any(f.verdict is verdict for f in findings):
            return verdict
    return Verdict.OK

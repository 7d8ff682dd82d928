"""The admin's «Доставляемость» / Deliverability page: the doctor's findings
(:mod:`vykhukhol.mail.doctor`) in the admin's language, each with its fix,
and the letters of the last days to the big mailbox providers with what the
bulk-sender rules will ask (:mod:`vykhukhol.watch.receivers`). A GET asks
the DNS afresh (a few seconds at most, the resolver's timeout); it changes
nothing."""

from __future__ import annotations

from vykhukhol.mail import doctor
from vykhukhol.watch import receivers
from vykhukhol.web.admin.core import Admin
from vykhukhol.web.http import Response


def deliverability_page(admin: Admin, args: dict) -> Response:
    findings = doctor.examine(admin.data, admin.settings, admin.lang)
    rows = [{"check": f.check, "subject": f.subject, "verdict": f.verdict.value,
             "label": f.verdict.label(admin.lang), "found": f.found, "fix": f.fix}
            for f in findings]
    days = receivers.recent(admin.data)
    return admin.page("deliverability.html", rows=rows, days=days,
                      groups=[(group, receivers.title(group, admin.lang)) for group in receivers.GROUPS],
                      bulk=receivers.BULK_LINE)

"""Removed by bounces: the addresses a refusal deleted in the last 90 days
(:mod:`vykhukhol.members.removed`), each with the words that decided and a
Restore button. The file is written only by that module; the POST carries
the session's CSRF token (:func:`.core.serve`)."""

from __future__ import annotations

from vykhukhol.addresses import check_email
from vykhukhol.bounces import counts
from vykhukhol.errors import BadInput, Conflict, NotFound
from vykhukhol.members import removed, suppression
from vykhukhol.timeutil import format_time, now
from vykhukhol.web.admin.bounces import source_label
from vykhukhol.web.admin.core import Admin, local_time
from vykhukhol.web.http import Response


def removed_page(admin: Admin, args: dict, error: str = "", status: int = 200) -> Response:
    moment = now()
    removed.prune(admin.data, moment)  # nothing older than KEEP_DAYS is shown, nor kept
    rows = []
    for removal in removed.removals(admin.data, moment):
        latest = removal.latest
        services = []
        for kept in removal.lines:
            sub = kept.subscriber
            services.append({"name": kept.service,
                             "state": sub.state.label(admin.lang) if sub else "—",
                             "sent": sub.sent if sub else 0})
        rows.append({"address": removal.address,
                     "when": local_time(admin.settings, format_time(removal.when)),
                     "cause": suppression.label(latest.cause, admin.lang),
                     "source": source_label(admin, latest.source),
                     "words": latest.words if latest.words != "-" else "", "services": services})
    return admin.page("removed.html", status, rows=rows, days=removed.KEEP_DAYS, error=error)


def removed_restore(admin: Admin, args: dict) -> Response:
    try:
        email = check_email(admin.request.form().get("email", ""))
        done = removed.restore(admin.data, admin.settings, email, now(),
                               settle=counts.forget_counts)
    except (BadInput, NotFound, Conflict) as exc:
        return removed_page(admin, args, error=exc.text(admin.lang), status=exc.status)
    message = admin._n("{email} is back in {n} service and off the suppression list.",
                       "{email} is back in {n} services and off the suppression list.",
                       len(done.services), email=done.address)
    if done.already:
        message += " " + admin._("Subscribed again meanwhile, left as it is: {services}.",
                                 services=", ".join(done.already))
    if done.missing:
        message += " " + admin._("Not restored (the service is gone, or its kept line does not "
                                 "read): {services}.", services=", ".join(done.missing))
    return admin.done("/removed", message)

"""Webhooks: the URLs told of the list's events
(docs/using/webhooks.md#webhooks) — each with its state, the events it
wants and its recent deliveries; adding one (its secret shown once), a test
event, switching off and on, removing. Every POST carries the session's CSRF
token (:func:`.core.serve`); the file is written only by
:mod:`vykhukhol.webhooks.endpoints`."""

from __future__ import annotations

from vykhukhol.errors import BadInput, NotFound
from vykhukhol.files import events
from vykhukhol.timeutil import format_time
from vykhukhol.web.admin.core import Admin, local_time
from vykhukhol.web.http import Response
from vykhukhol.webhooks import dispatch, endpoints, progress

SHOWN = 10  # recent deliveries a webhook shows


def _when(admin: Admin, stamp: int) -> str:
    from datetime import datetime, timezone

    return local_time(admin.settings, format_time(datetime.fromtimestamp(stamp, timezone.utc)))


def webhooks_page(admin: Admin, args: dict, error: str = "", status: int = 200,
                  secret: str = "", added: str = "") -> Response:
    rows = []
    try:
        found = endpoints.load(admin.data)
    except BadInput as exc:
        found, error = [], exc.text(admin.lang)
        status = 500 if status == 200 else status
    for e in found:
        rows.append({"name": e.name, "url": e.url, "enabled": e.enabled, "private": e.allow_private,
                     "events": [admin._("all") if k == endpoints.ALL else k for k in sorted(e.events)],
                     "waiting": len(progress.read_retries(admin.data, e.name)),
                     "deliveries": [{"when": _when(admin, d.time), "type": d.type, "attempt": d.attempt,
                                     "outcome": d.outcome, "ok": d.ok, "ms": d.millis}
                                    for d in progress.recent(admin.data, e.name, SHOWN)]})
    return admin.page("webhooks.html", status, rows=rows, kinds=events.TYPES, error=error,
                      secret=secret, added=added, debug=admin.settings["mode"] != "working")


def webhooks_add(admin: Admin, args: dict) -> Response:
    form = admin.request.form()
    chosen = [k for k in events.TYPES if form.get(f"event-{k}") == "on"]
    try:
        endpoint = endpoints.add(admin.data, form.get("name", "").strip(), form.get("url", "").strip(),
                                 ",".join(chosen) or endpoints.ALL, form.get("private") == "on")
    except BadInput as exc:
        return webhooks_page(admin, args, error=exc.text(admin.lang), status=400)
    return webhooks_page(admin, args, secret=endpoint.secret, added=endpoint.name)


def _named(admin: Admin) -> str:
    return admin.request.form().get("name", "")


def webhooks_test(admin: Admin, args: dict) -> Response:
    name = _named(admin)
    try:
        answer = dispatch.send_test(admin.data, name, admin.settings["mode"] != "working")
    except BadInput as exc:
        return webhooks_page(admin, args, error=exc.text(admin.lang), status=404)
    if answer.ok:
        message = admin._("Test event delivered to {name}: {answer} in {ms} ms.", name=name,
                          answer=answer.text(), ms=answer.millis)
    else:
        message = admin._("Test event to {name} failed: {answer}.", name=name, answer=answer.text())
    return admin.done("/webhooks", message)


def webhooks_switch(admin: Admin, args: dict) -> Response:
    name, on = _named(admin), admin.request.form().get("on") == "yes"
    try:
        endpoints.change(admin.data, name, enabled=on)
    except NotFound as exc:
        return webhooks_page(admin, args, error=exc.text(admin.lang), status=404)
    if on:
        progress.start_from_now(admin.data, name)
        return admin.done("/webhooks", admin._("Webhook {name} is on: it gets the events from now on.",
                                               name=name))
    return admin.done("/webhooks", admin._("Webhook {name} is off: its events are not kept for it.",
                                           name=name))


def webhooks_remove(admin: Admin, args: dict) -> Response:
    name = _named(admin)
    if admin.request.form().get("confirm") != "yes":
        return admin.page("confirm.html", title=admin._("Remove webhook {name}?", name=name),
                          warning=admin._("It gets no more events; its retries and deliveries are "
                                          "forgotten."),
                          action=admin.url("/webhooks/remove"), hidden={"name": name},
                          cancel=admin.url("/webhooks"))
    try:
        endpoints.remove(admin.data, name)
    except NotFound as exc:
        return webhooks_page(admin, args, error=exc.text(admin.lang), status=404)
    return admin.done("/webhooks", admin._("Webhook {name} removed.", name=name))

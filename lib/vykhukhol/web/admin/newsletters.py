"""Letters to all users: the form (with preview and test letter), creating one,
the list, cancelling and changing its start, who did not get one and sending
it again to them (docs/using/newsletters.md#newsletter-failed)."""

from __future__ import annotations

from functools import partial
from typing import TypedDict
from zoneinfo import ZoneInfo

import vykhukhol.web.admin.letter_versions as letter_versions
from vykhukhol import newsletters
from vykhukhol import services as svc
from vykhukhol.datadir import check_name
from vykhukhol.errors import BadInput, NotFound, VykhukholError
from vykhukhol.mail import compose
from vykhukhol.members import suppression
from vykhukhol.newsletters import clicks, segments
from vykhukhol.services import subscribers as subs
from vykhukhol.states import LedgerState
from vykhukhol.timeutil import now, parse_local_time
from vykhukhol.watch import forecast
from vykhukhol.web.admin.brakes import braked, resume
from vykhukhol.web.admin.core import Admin, local_time
from vykhukhol.web.admin.series import preview_both, saved_message
from vykhukhol.web.admin.testletters import mark, send_test
from vykhukhol.web.http import Response


class Fields(TypedDict):
    """The form's fields as typed (``services``: the names ticked)."""

    services: list[str]
    subject: str
    text: str
    html: str
    at: str
    public: str
    test_to: str
    clicks: str
    markdown: str
    where: str  # a segment's condition; "" for all
    other_subject: str  # the letter in the other language (web/admin/letter_versions.py)
    other_body: str
    other_html: str
    other_language: str


def _audience(admin: Admin) -> tuple[list[dict], int]:
    rows, seen = [], set()
    for service in svc.load_services(admin.data):
        count = 0
        for sub in subs.subscribers(service.subscribers_path):
            if sub.state.confirmed:
                count += 1
                seen.add(sub.key)
        rows.append({"service": service, "confirmed": count})
    return rows, len(seen)


def newsletter_form(admin: Admin, args: dict, fields: Fields | None = None, error: str = "",
                    preview: dict | None = None, status: int = 200, chosen: str = "") -> Response:
    """``chosen``: what the Count button found (docs/using/newsletters.md#newsletter-segments)."""
    audience, unique = _audience(admin)
    fields = fields or {"services": [], "subject": "", "text": "", "html": "", "at": "", "public": "",
                        "test_to": admin.settings["admin_email"], "clicks": "", "markdown": "",
                        "where": "",
                        "other_subject": "", "other_body": "", "other_html": "",
                        "other_language": letter_versions.other_language(admin)}
    return admin.page("newsletter_new.html", status, audience=audience, unique=unique,
                      fields=fields, error=error, preview=preview or {}, chosen=chosen)


def newsletter_create(admin: Admin, args: dict) -> Response:
    form = admin.request.form()
    chosen = [k[len("svc_"):] for k in form if k.startswith("svc_")]
    other = letter_versions.from_form(admin)
    fields: Fields = {
        "services": chosen, "subject": form.get("subject", ""), "text": form.get("text", ""),
        "html": form.get("html", ""), "at": form.get("at", "").replace("T", " "),
        "public": "yes" if form.get("public") == "yes" else "", "test_to": form.get("test_to", ""),
        "clicks": "yes" if form.get("clicks") == "yes" else "",
        "markdown": "yes" if form.get("markdown") == "yes" else "", "where": form.get("where", ""),
        "other_subject": other["other_subject"], "other_body": other["other_body"],
        "other_html": other["other_html"], "other_language": other["other_language"]}
    markdown = fields["markdown"] == "yes"
    action = form.get("action", "create")
    if action == "count":
        return newsletter_count(admin, args, fields)
    if action in ("preview", "test"):
        service = None
        for name in chosen:
            try:
                service = svc.find_service(admin.data, name)
                break
            except VykhukholError:
                continue
        if service is None:
            return newsletter_form(admin, args, fields, admin._("Choose at least one service."), status=400)
        letter = {"subject": fields["subject"], "body": fields["text"], "html": fields["html"],
                  "markdown": fields["markdown"], **other}
        if action == "preview":
            return newsletter_form(admin, args, fields, preview=preview_both(admin, service, letter))
        both = letter_versions.given(other)  # then one letter in each language, each saying which

        def made(subject: str, text: str, html: str, language: str | None, email: str, name: str):
            if language:  # refused as the job would refuse it, before either letter goes
                subject = newsletters.check_letter(subject, text, html or None, markdown)
            marked = mark(admin, subject, (language or admin.settings["language"]) if both else None)
            return compose.newsletter(service, marked, *svc.sent_parts(text, html or None, markdown),
                                      admin.settings, email, name, "admin-test", now(), lang=language)

        second = partial(made, other["other_subject"], other["other_body"], other["other_html"],
                         other["other_language"]) if both else None
        try:
            said = send_test(admin, fields["test_to"],
                             partial(made, fields["subject"], fields["text"], fields["html"], None),
                             second)
        except BadInput as exc:
            return newsletter_form(admin, args, fields, exc.text(admin.lang), status=400)
        admin.outcome = ("/newsletters/new", said)  # in place: the unsaved letter stays on the form
        admin.flash.append(said)
        return newsletter_form(admin, args, fields)
    try:
        start = newsletters.check_start(parse_local_time(fields["at"], admin.settings["timezone"]),
                                         fields["at"]) \
            if fields["at"].strip() else None
        where = segments.of_site(admin.data, fields["where"], admin.settings["language"])
        name = newsletters.create(admin.data, chosen, fields["subject"], fields["text"],
                                  fields["html"] or None, start, public=fields["public"] == "yes",
                                  clicks=fields["clicks"] == "yes", markdown=markdown, where=where,
                                  versions=letter_versions.versions(admin, other))
    except BadInput as exc:
        return newsletter_form(admin, args, fields, exc.text(admin.lang), status=400)
    said = admin._("Newsletter {name} created.", name=name)
    try:  # how many it goes to (a run may have finished a tiny one already)
        said += " " + admin._("Recipients: {n}.", n=newsletters.read_job(admin.data, name)
                              .values.get("total", "0"))
    except (BadInput, NotFound):
        pass
    return admin.done("/newsletters", saved_message(
        admin, said,
        {"subject": fields["subject"], "body": fields["text"], "html": fields["html"]}))


def newsletter_count(admin: Admin, args: dict, fields: Fields) -> Response:
    """The Count button: how many the chosen services and the condition would
    reach now, or the condition's error with its column; nothing is made."""
    try:
        if not fields["services"]:
            raise BadInput("choose at least one service")
        where = segments.of_site(admin.data, fields["where"], admin.settings["language"])
        count = newsletters.count_chosen(admin.data, fields["services"], where)
    except (BadInput, NotFound) as exc:
        return newsletter_form(admin, args, fields, exc.text(admin.lang), status=400)
    if where is None:
        said = admin._n("{n} confirmed subscriber.", "{n} confirmed subscribers.", count)
    elif count:
        said = admin._n("The condition chooses {n} subscriber.",
                        "The condition chooses {n} subscribers.", count)
    else:
        said = admin._("No subscriber matches the condition: a newsletter would go to nobody.")
    return newsletter_form(admin, args, fields, chosen=said)


def newsletters_page(admin: Admin, args: dict) -> Response:
    moment = now()
    paused = forecast.newsletters_paused(admin.data, admin.settings, moment, admin.lang)
    jobs = []
    for job in newsletters.list_jobs(admin.data):
        count = newsletters.counts(admin.data.job(job.name, "list"))
        try:
            subject = newsletters.read_letter(admin.data, job.name)[0]
        except NotFound:
            subject = "?"
        failed = [r.email for r in newsletters.read_rows(admin.data.job(job.name, "list"))
                  if r.state is LedgerState.FAILED][:20]
        start_local = job.start.astimezone(ZoneInfo(admin.settings["timezone"]))
        done = forecast.newsletter_finish(admin.data, admin.settings, count["pending"], job.start,
                                          moment)
        jobs.append({"job": job, "count": count, "subject": subject, "failed": failed,
                     "finish": paused.get(job.name) or forecast.describe(
                         done, moment, admin.lang, admin.settings["timezone"]),
                     "start": start_local.strftime("%Y-%m-%d %H:%M"),
                     "start_input": start_local.strftime("%Y-%m-%dT%H:%M"),
                     "due": job.start <= now(),
                     "editable": job.values.get("first_run", "-") == "-"})

    history = newsletters.history_now(admin.data)
    missed = {path.stem for pattern in ("*.missed", "*.job")  # a list to show, kept or live
              for path in admin.data.newsletters.glob(pattern)}
    return admin.page("newsletters.html", jobs=jobs, states=LedgerState, history=history,
                      missed=missed,
                      braked=braked(admin, "newsletter"), paused=paused,
                      clicks=clicks.of_letters(admin.data, [entry.job for entry in history]),
                      local=lambda t: "" if t == "-" else local_time(admin.settings, t))


def _job(admin: Admin, name: str) -> str:
    try:
        return check_name(name, "newsletter name")
    except BadInput:
        raise NotFound(admin._("No such newsletter.")) from None


def newsletter_cancel(admin: Admin, args: dict) -> Response:
    name = _job(admin, args["job"])
    if admin.request.form().get("confirm") != "yes":  # the list's button: ask first
        try:
            subject = newsletters.read_letter(admin.data, name)[0]
        except NotFound:
            subject = "?"
        count = newsletters.counts(admin.data.job(name, "list"))
        return admin.page(
            "confirm.html", title=admin._("Cancel newsletter {name}?", name=name),
            warning=admin._n("“{subject}” is not sent to the {n} recipient still waiting for it; letters already handed over stay sent. This cannot be undone.",
                             "“{subject}” is not sent to the {n} recipients still waiting for it; letters already handed over stay sent. This cannot be undone.",
                             count["pending"], subject=subject),
            action=admin.url(f"/newsletters/{name}/cancel"), hidden={},
            cancel=admin.url("/newsletters"), button=admin._("Cancel the newsletter"),
            back=admin._("Keep it"))
    newsletters.cancel(admin.data, name)
    return admin.done("/newsletters", admin._("Newsletter {name} cancelled.", name=name))


def newsletter_resume(admin: Admin, args: dict) -> Response:
    """A braked newsletter goes on (docs/deliverability/reputation.md#brakes)."""
    name = _job(admin, args["job"])
    return resume(admin, "newsletter", name, "/newsletters",
                  admin._("Newsletter {name} resumed: it sends again with the next run.",
                          name=name))


def newsletter_failed(admin: Admin, args: dict, error: str = "", status: int = 200) -> Response:
    """Who did not get it, and why; the button that sends it again to those
    refused for a while who may still have it."""
    name = _job(admin, args["job"])
    rows = newsletters.missed.of_job(admin.data, name)  # NotFound: the error page says it
    checker = suppression.Checker(admin.data, suppression.secret_of(admin.settings))
    again = newsletters.missed.resendable(admin.data, name, checker)
    return admin.page("newsletter_failed.html", status, job=name, rows=rows, again=len(again),
                      running=admin.data.job(name, "job").exists(), error=error,
                      days=newsletters.missed.KEEP_DAYS,
                      labels={why: why.label(admin.lang) for why in newsletters.missed.Why},
                      local=lambda t: "" if t == "-" else local_time(admin.settings, t))


def newsletter_resend(admin: Admin, args: dict) -> Response:
    name = _job(admin, args["job"])
    checker = suppression.Checker(admin.data, suppression.secret_of(admin.settings))
    try:
        made, count = newsletters.resend(admin.data, name, checker)
    except BadInput as exc:
        return newsletter_failed(admin, args, exc.text(admin.lang), status=400)
    return admin.done("/newsletters", admin._n(
        "Newsletter {name} made: it sends the letter again to {n} recipient.",
        "Newsletter {name} made: it sends the letter again to {n} recipients.", count, name=made))


def newsletter_start(admin: Admin, args: dict) -> Response:
    name = _job(admin, args["job"])
    at = admin.request.form().get("at", "").replace("T", " ")
    newsletters.reschedule(admin.data, name, parse_local_time(at, admin.settings["timezone"]))
    return admin.done("/newsletters", admin._("Start time changed."))


def newsletter_edit_form(admin: Admin, args: dict, fields: dict | None = None, error: str = "",
                         preview: dict | None = None, status: int = 200) -> Response:
    """A waiting newsletter's letter, to change until its first letter leaves."""
    name = _job(admin, args["job"])
    try:
        job = newsletters.read_job(admin.data, name)
        subject, text, html, markdown = newsletters.read_source(admin.data, name)
    except (BadInput, NotFound):
        raise NotFound(admin._("No such newsletter.")) from None
    fields = fields or {"subject": subject, "text": text, "html": html or "",
                        "markdown": "yes" if markdown else "",
                        **letter_versions.of_job(admin, newsletters.read_version_sources(
                            admin.data, name))}
    if job.values.get("first_run", "-") != "-" and not error:
        error = admin._("Its first letter has left: it can no longer be changed.")
    return admin.page("newsletter_edit.html", status, job=job, fields=fields, error=error,
                      preview=preview or {})


def newsletter_edit(admin: Admin, args: dict) -> Response:
    name = _job(admin, args["job"])
    form = admin.request.form()
    fields = {key: form.get(key, "") for key in ("subject", "text", "html")}
    fields["markdown"] = "yes" if form.get("markdown") == "yes" else ""
    fields.update(letter_versions.from_form(admin))
    if form.get("action") == "preview":
        try:
            service = svc.find_service(admin.data, newsletters.read_job(admin.data, name).services[0])
        except (BadInput, NotFound, IndexError):
            raise NotFound(admin._("No such newsletter.")) from None
        letter = {"subject": fields["subject"], "body": fields["text"], "html": fields["html"],
                  "markdown": fields["markdown"], **letter_versions.from_form(admin)}
        return newsletter_edit_form(admin, args, fields, preview=preview_both(admin, service, letter))
    try:
        newsletters.edit_letter(admin.data, name, fields["subject"], fields["text"],
                                fields["html"] or None, fields["markdown"] == "yes",
                                letter_versions.changes(admin, fields))
    except NotFound:
        raise NotFound(admin._("No such newsletter.")) from None
    except BadInput as exc:
        return newsletter_edit_form(admin, args, fields, exc.text(admin.lang), status=400)
    return admin.done("/newsletters", admin._("Newsletter {name} changed.", name=name))

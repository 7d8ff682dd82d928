"""What the lists hold: ``db``, ``service``, ``letter``, ``subscriber`` and
``newsletter``."""

from __future__ import annotations

import sys
from pathlib import Path

from vykhukhol import newsletters
from vykhukhol import services as svc
from vykhukhol.cli.common import Context, export_target, progress
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, NoSecret
from vykhukhol.members import membership
from vykhukhol.services import subscribers as subs
from vykhukhol.timeutil import format_time, parse_local_time
from vykhukhol.watch import brakes


def cmd_db(ctx: Context, args) -> None:
    ctx.settings()
    if args.action == "add":
        svc.add_db(ctx.data, args.name)
        print(f"DB {args.name} added")
    elif args.action == "remove":
        svc.remove_db(ctx.data, args.name)
        print(f"DB {args.name} removed")
    else:
        for db in svc.list_dbs(ctx.data):
            print(db)


def _service_values(args) -> dict[str, str]:
    values = {}
    for option, key in (("title", "title"), ("from_name", "from_name"), ("from_email", "from_email"),
                        ("delete_finished", "delete_finished"), ("send_window", "send_window"),
                        ("public", "public"), ("confirm_subject", "confirm_subject"),
                        ("confirm_body", "confirm_body")):
        value = getattr(args, option, None)
        if value is not None:
            values[key] = value
    return values


def cmd_service(ctx: Context, args) -> None:
    ctx.settings()
    data = ctx.data
    if args.action == "add":
        svc.add_service(data, args.name, args.db, _service_values(args))
        print(f"service {args.name} added to DB {args.db} (disabled; enable it when its letters are ready)")
    elif args.action == "edit":
        values = _service_values(args)
        if not values:
            raise BadInput("nothing to change: give at least one option")
        svc.edit_service(data, args.name, values)
        print(f"service {args.name} changed")
    elif args.action in ("enable", "disable"):
        svc.edit_service(data, args.name, {"enabled": "yes" if args.action == "enable" else "no"})
        print(f"service {args.name} {args.action}d")
    elif args.action == "remove":
        svc.remove_service(data, args.name)
        print(f"service {args.name} removed")
    elif args.action == "resume":
        svc.find_service(data, args.name)  # NotFound: one clear line
        resume(ctx, brakes.SERVICE, args.name)
    else:
        print("\t".join(("#name", "db", "state", "letters", "title")))
        for service in svc.load_services(data):
            print("\t".join((service.name, service.db, "enabled" if service.enabled else "disabled",
                             str(svc.letter_count(service)), service.title)))


def _read_file(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"{what}: cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise BadInput(f"{what}: {path} is not UTF-8 text") from None


def _body(args) -> str:
    return args.body if args.body is not None else _read_file(args.body_file, "--body-file")


def warn_unknown(*sources: str | None) -> None:
    """A warning on stderr for each variable no letter is given ({{ nmae }}):
    saved all the same, it renders as nothing (README section 4)."""
    from vykhukhol import render

    for name in sorted({n for source in sources for n in render.unknown_variables(source or "")}):
        print(f"warning: {{{{ {name} }}}} is not a variable letters are given; it stays empty "
              "in every letter", file=sys.stderr)


def cmd_letter(ctx: Context, args) -> None:
    ctx.settings()
    service = svc.find_service(ctx.data, args.service)
    if args.action == "add":
        html = _read_file(args.html_file, "--html-file") if args.html_file else None
        number = svc.add_letter(service, args.subject, args.delay, _body(args), html,
                                public=args.public, clicks=args.clicks)
        print(f"letter {number} added to {service.name}")
        warn_unknown(args.subject, _body(args), html)
    elif args.action == "remove":
        svc.remove_letter(service, args.number)
        print(f"letter {args.number} removed from {service.name}; later letters moved up")
    else:
        from vykhukhol.timeutil import format_duration
        letters = svc.load_letters(service)  # a letter that does not parse: nothing printed
        print("\t".join(("#number", "delay", "subject", "html", "public")))
        for letter in letters:
            print(f"{letter.number}\t{format_duration(letter.delay)}\t{letter.subject}"
                  f"\t{'(html)' if letter.html else '-'}\t{'public' if letter.public else '-'}")


def cmd_subscriber(ctx: Context, args) -> None:
    settings = ctx.settings()
    data = ctx.data
    if args.action == "add":
        if not args.confirmed and settings.secret_problem:  # the letter could carry no link
            raise NoSecret(settings.secret_problem)
        result = membership.subscribe(data, settings, args.service, args.email, args.name or "",
                                      ip="cli", confirmed=args.confirmed)
        if result == "suppressed":
            from vykhukhol.members import suppression

            raise BadInput(suppression.REFUSAL, email=args.email)
        print({"added": f"{args.email} added" + ("" if args.confirmed else ", asked to confirm"),
               "known": f"{args.email} is subscribed already; nothing changed",
               "confirmed": f"{args.email} confirmed",
               "too soon": f"{args.email} was asked to confirm less than 10 minutes ago",
               "asked again": f"{args.email} asked to confirm again"}[result])
    elif args.action == "remove":
        membership.remove(data, args.service, args.email)
        print(f"{args.email} removed from {args.service}")
    elif args.action == "list":
        service = svc.find_service(data, args.service)
        print(subs.HEADER)
        for item in subs.read(service.subscribers_path):
            print(item.to_line() if isinstance(item, subs.Subscriber) else item.text)
    elif args.action == "import":
        text = _read_file(args.file, "import file")
        from vykhukhol.members import importing

        result = importing.import_addresses(data, settings, args.service, text, args.confirmed)
        progress("")
        print(f"{result['added']} added, {result['duplicates']} already there, "
              f"{len(result['invalid'])} invalid"
              + (f", {result['suppressed']} suppressed (skipped)" if result["suppressed"] else ""))
        for lineno, line, reason in result["invalid"][:50]:
            print(f"line {lineno}: {line!r}: {reason}", file=sys.stderr)
    elif args.action == "export":
        export(data, args.service, args.file)


def export(data: DataDir, service_name: str, target: str | None) -> None:
    from vykhukhol.members.export import write_csv

    service = svc.find_service(data, service_name)
    with export_target(target) as (out, counted):
        write_csv(service.subscribers_path, out, progress=counted)


def cmd_newsletter(ctx: Context, args) -> None:
    settings = ctx.settings()
    data = ctx.data
    if args.action == "create":
        html = _read_file(args.html_file, "--html-file") if args.html_file else None
        try:
            start = newsletters.check_start(parse_local_time(args.at, settings["timezone"]), args.at) \
                if args.at else None
        except BadInput as exc:
            raise BadInput(f"--at: {exc.message}") from None
        name = newsletters.create(data, args.services.split(","), args.subject, _body(args), html,
                                  start, progress=lambda n: progress(f"recipients: {n}"),
                                  public=args.public, clicks=args.clicks)
        progress("")
        warn_unknown(args.subject, _body(args), html)
        total = newsletters.read_job(data, name).values.get("total", "0")
        print(name)
        print(f"{total} recipients", file=sys.stderr)
    elif args.action == "cancel":
        newsletters.cancel(data, args.job)
        print(f"newsletter {args.job} cancelled")
    elif args.action == "resume":
        newsletters.read_job(data, args.job)  # NotFound: one clear line
        resume(ctx, brakes.NEWSLETTER, args.job)
    elif args.action == "history":
        print_history(newsletters.history_now(data), args.json, data)
    else:
        from vykhukhol.timeutil import now
        from vykhukhol.watch import forecast

        moment = now()
        for job in newsletters.list_jobs(data):
            count = newsletters.counts(data.job(job.name, "list"))
            done = forecast.newsletter_finish(data, settings, count["pending"], job.start, moment)
            print("\t".join((job.name, format_time(job.start), ",".join(job.services),
                             f"handed over {count['sent']}/{count['total']}", f"failed {count['failed']}",
                             f"skipped {count['skipped']}", f"in doubt {count['in doubt']}",
                             forecast.describe(done, moment, "en", settings["timezone"]))))


def resume(ctx: Context, kind: str, name: str) -> None:
    """``service resume`` / ``newsletter resume``: a braked target goes on."""
    if not brakes.resume(ctx.data, ctx.settings(), kind, name):
        raise BadInput("{target} is not braked: nothing to resume",
                       target=brakes.target(kind, name))
    print(f"{brakes.target(kind, name)} resumed: it sends again with the next run; "
          "its complaints and addresses gone so far are forgotten")


def print_history(entries: list, as_json: bool, data: DataDir) -> None:
    """``newsletter history``: one line per newsletter (tab-separated, a header
    first), or with ``--json`` a list of objects. Times are UTC; "handed" is
    what the mail server accepted, not what was delivered. Clicks: the total
    ("-" when not counted), and in the JSON each link's (issue 29)."""
    from vykhukhol.newsletters import clicks

    counted = clicks.of_letters(data, [entry.job for entry in entries])
    if as_json:
        import json

        print(json.dumps([{**entry.to_json(), **clicks.to_json(counted.get(entry.job))}
                          for entry in entries], ensure_ascii=False, indent=1))
        return
    print("#job\tstarted\tfinished\thanded over\tfailed\tin doubt\tbounced\tcomplaints\t"
          "unsubscribed\tclicks\tservices\tsubject")
    for e in entries:
        shown = str(clicks.total(counted[e.job])) if e.job in counted else "-"
        print("\t".join((e.job, e.started, e.finished, str(e.handed), str(e.failed),
                         str(e.in_doubt), str(e.bounced), str(e.complaints),
                         str(e.unsubscribed), shown, ",".join(e.services) or "-", e.subject or "-")))


def cmd_archive(ctx: Context, args) -> None:
    from vykhukhol import archive
    from vykhukhol.archive import pages, publish

    settings = ctx.settings()
    if args.action == "build":
        service = svc.find_service(ctx.data, args.service)
        count = pages.build(ctx.data, settings, service)
    else:
        service = publish.switch(ctx.data, settings, args.service, args.action == "on")
        count = len(archive.entries(ctx.data, service.name))
    if service.archive:
        print(f"archive of {service.name} is on: {archive.index_url(settings, service.name)} "
              f"({count} letters published so far), written in "
              f"{archive.folder(settings) / service.name}")
    else:
        print(f"archive of {service.name} is off; its pages are removed")

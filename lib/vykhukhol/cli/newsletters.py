"""``newsletter``: letters to every subscriber of some services, their jobs
and their history, the arguments beside the code."""

from __future__ import annotations

import sys

from vykhukhol import newsletters
from vykhukhol.cli.common import (
    Context,
    Parser,
    actions,
    add_command,
    language_arguments,
    language_versions,
    letter_body,
    letter_text_arguments,
    numbered,
    progress,
    read_file,
    resume,
    warn_unknown,
)
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput
from vykhukhol.files.runlog import one_line
from vykhukhol.newsletters import clicks, missed, segments
from vykhukhol.timeutil import format_time, now, parse_local_time
from vykhukhol.watch import brakes, forecast

JOB_HELP = "its name, as create printed it"
WHERE_HELP = ('only the confirmed subscribers it chooses, e.g. \'city = "Тверь" and joined > '
              '2026-01-01\' (the manual, docs/using/newsletters.md, Segments)')


def newsletter_arguments(p: Parser) -> None:
    what = actions(p)
    a = add_command(what, "create", "make a job; prints its name",
                    'vykhukhol newsletter create --services news --subject "News for {{ name }}" '
                    "--body-file december.txt",
                    'vykhukhol newsletter create --services news --subject "December" '
                    "--body-file december.md --markdown",
                    'vykhukhol newsletter create --services news,offers --subject "Sale" '
                    '--body "…" --at "2026-12-01 09:00" --public',
                    'vykhukhol newsletter create --services news --subject "Новости" '
                    '--body-file news.ru.txt --subject-en "News" --body-file-en news.en.txt')
    a.add_argument("--services", required=True, help="service names, e.g. news,offers")
    a.add_argument("--subject", required=True, help='a template, e.g. "News for {{ name }}"')
    letter_text_arguments(a, "publish it in its services' archives once it has gone out",
                     "count its links' clicks through cgi/go.py (no address, no IP; off by default)")
    language_arguments(a)
    a.add_argument("--at", metavar="YYYY-MM-DD HH:MM",
                   help='start time in timezone, e.g. "2026-12-01 09:00" (default: now; not in the past)')
    a.add_argument("--where", metavar="CONDITION", default="", help=WHERE_HELP)
    a = add_command(what, "count", "how many confirmed subscribers a newsletter would go to now",
                    'vykhukhol newsletter count --services news --where \'city = "Тверь"\'')
    a.add_argument("--services", required=True, help="service names, e.g. news,offers")
    a.add_argument("--where", metavar="CONDITION", default="", help=WHERE_HELP)
    add_command(what, "list", "the jobs and their progress")
    a = add_command(what, "history", "every newsletter: handed over, failed, bounced, "
                                     "complaints, unsubscribed (newest first)")
    a.add_argument("--json", action="store_true", help="a JSON list of objects")
    a = add_command(what, "failed", "who did not get it: refused, skipped or in doubt, and why "
                                    f"(while it runs and {missed.KEEP_DAYS} days after)",
                    "vykhukhol newsletter failed 20261201-090000-a1b2c3 --csv > failed.csv")
    a.add_argument("job", help=JOB_HELP)
    a.add_argument("--csv", action="store_true", help="CSV with a header line")
    add_command(what, "resend", "send it again to those refused for a while (4xx, no connection) "
                                "who are still subscribed: a new job").add_argument("job", help=JOB_HELP)
    add_command(what, "cancel", "stop a job and delete it").add_argument("job", help=JOB_HELP)
    add_command(what, "resume", "let a braked job send again").add_argument("job", help=JOB_HELP)


def cmd_newsletter(ctx: Context, args) -> None:
    settings = ctx.settings()
    data = ctx.data
    if args.action == "create":
        html = read_file(args.html_file, "--html-file") if args.html_file else None
        try:
            start = newsletters.check_start(parse_local_time(args.at, settings["timezone"]), args.at) \
                if args.at else None
        except BadInput as exc:
            raise BadInput(f"--at: {exc.message}") from None
        versions = language_versions(args)
        where = chosen(data, args.services, args.where, settings["language"])
        name = newsletters.create(data, args.services.split(","), args.subject, letter_body(args), html,
                                  start, progress=lambda n: progress(f"recipients: {n}"),
                                  public=args.public, clicks=args.clicks, markdown=args.markdown,
                                  where=where, versions=versions)
        progress("")
        warn_unknown(args.subject, letter_body(args), html,
                     *(part for version in versions.values() for part in version))
        total = newsletters.read_job(data, name).values.get("total", "0")
        print(name)
        print(numbered(int(total), "recipient"), file=sys.stderr)
    elif args.action == "count":
        where = where_of(data, args.where, settings["language"])
        print(newsletters.count_chosen(data, services_of(args.services), where))
    elif args.action == "cancel":
        newsletters.cancel(data, args.job)
        print(f"newsletter {args.job} cancelled")
    elif args.action == "resume":
        newsletters.read_job(data, args.job)  # NotFound: one clear line
        resume(ctx, brakes.NEWSLETTER, args.job)
    elif args.action == "failed":
        print_failed(newsletters.missed.of_job(data, args.job), args.csv)
    elif args.action == "resend":
        from vykhukhol.members import suppression  # not on every command's start

        checker = suppression.Checker(data, suppression.secret_of(settings))
        name, again = newsletters.resend(data, args.job, checker)
        print(name)
        print(f"{numbered(again, 'recipient')}: it goes with the next runs", file=sys.stderr)
    elif args.action == "history":
        print_history(newsletters.history_now(data), args.json, data)
    else:
        moment = now()
        paused = forecast.newsletters_paused(data, settings, moment, "en")
        print("#job\tstart\tservices\thanded over\tfailed\tskipped\tin doubt\tfinish")
        for job in newsletters.list_jobs(data):
            count = newsletters.counts(data.job(job.name, "list"))
            if job.name in paused:
                finish = paused[job.name]
            else:
                done = forecast.newsletter_finish(data, settings, count["pending"], job.start, moment)
                finish = forecast.describe(done, moment, "en", settings["timezone"])
            print("\t".join((job.name, format_time(job.start), ",".join(job.services),
                             f"handed over {count['sent']}/{count['total']}", f"failed {count['failed']}",
                             f"skipped {count['skipped']}", f"in doubt {count['in doubt']}", finish)))
        if paused:
            print("a paused newsletter goes on with: vykhukhol newsletter resume JOB",
                  file=sys.stderr)


def services_of(typed: str) -> list[str]:
    return [name.strip() for name in typed.split(",") if name.strip()]


def where_of(data: DataDir, typed: str, language: str) -> segments.Condition | None:
    try:
        return segments.of_site(data, typed, language)
    except BadInput as exc:
        raise BadInput("--where: {reason}", reason=exc) from None


def chosen(data: DataDir, services: str, typed: str, language: str) -> segments.Condition | None:
    """``--where`` read, and how many it chooses said before the job is made
    (refused when nobody)."""
    where = where_of(data, typed, language)
    if where is not None:
        count = newsletters.count_chosen(data, services_of(services), where)
        segments.must_choose(count, where)
        print(f"{numbered(count, 'subscriber')} chosen by: {where.text}", file=sys.stderr)
    return where


def print_failed(rows: list[missed.Missed], as_csv: bool) -> None:
    """``newsletter failed``: one line per recipient who did not get it
    (tab-separated, a header first), or CSV; ``resent``: a resend took it over."""
    import csv

    header = ["email", "name", "state", "time", "why", "reply", "resent"]
    lines = [[m.email, m.name, m.state.value, m.time, m.why.value, m.reply,
              "yes" if m.resent else "no"] for m in rows]
    if as_csv:
        from vykhukhol.members.export import defused  # a name is the subscriber's own: no formula

        out = csv.writer(sys.stdout, lineterminator="\n")
        out.writerow(header)
        out.writerows([defused(cell) for cell in line] for line in lines)
        return
    print("#" + "\t".join(header))
    for line in lines:
        print("\t".join(one_line(field) or "-" for field in line))  # shown, never run
    if not rows:
        print("everyone got it (or nobody has been tried yet)", file=sys.stderr)


def print_history(entries: list, as_json: bool, data: DataDir) -> None:
    """``newsletter history``: one line per newsletter (tab-separated, a header
    first), or with ``--json`` a list of objects. Times are UTC; "handed" is
    what the mail server accepted, not what was delivered. Clicks: the total
    ("-" when not counted), and in the JSON each link's."""
    counted = clicks.of_letters(data, [entry.job for entry in entries])
    if as_json:
        import json

        print(json.dumps([{**entry.to_json(), **clicks.to_json(counted.get(entry.job))}
                          for entry in entries], ensure_ascii=False, indent=1))
        return
    print("#job\tstarted\tfinished\thanded over\tfailed\tin doubt\tbounced\tcomplaints\t"
          "unsubscribed\tclicks\tservices\tsubject\twhere\tmatched")
    for e in entries:
        shown = str(clicks.total(counted[e.job])) if e.job in counted else "-"
        print("\t".join((e.job, e.started, e.finished, str(e.handed), str(e.failed),
                         str(e.in_doubt), str(e.bounced), str(e.complaints),
                         str(e.unsubscribed), shown, ",".join(e.services) or "-", e.subject or "-",
                         e.where or "-", "-" if e.matched is None else str(e.matched))))

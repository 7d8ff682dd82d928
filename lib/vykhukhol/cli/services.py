"""The services and what they hold: ``db``, ``service`` (with the feed a
service follows), ``letter`` and ``archive``, each command's arguments beside
its code."""

from __future__ import annotations

from pathlib import Path

from vykhukhol import archive
from vykhukhol import services as svc
from vykhukhol.cli.common import (
    NAME_HELP,
    SERVICE_HELP,
    Context,
    Parser,
    actions,
    add_command,
    examples,
    language_arguments,
    language_versions,
    letter_body,
    letter_text_arguments,
    numbered,
    read_file,
    resume,
    warn_unknown,
)
from vykhukhol.errors import BadInput
from vykhukhol.newsletters import feed_settings, feeds
from vykhukhol.timeutil import format_duration, format_time
from vykhukhol.watch import brakes


def db_arguments(p: Parser) -> None:
    what = actions(p)
    add_command(what, "add", "make a DB").add_argument("name", help=NAME_HELP)
    add_command(what, "remove", "remove an empty DB").add_argument("name", help=NAME_HELP)
    add_command(what, "list", "the DBs, one a line, a header row first")


def cmd_db(ctx: Context, args) -> None:
    ctx.settings()
    if args.action == "add":
        svc.add_db(ctx.data, args.name)
        print(f"DB {args.name} added")
    elif args.action == "remove":
        svc.remove_db(ctx.data, args.name)
        print(f"DB {args.name} removed")
    else:
        print("#name")
        for db in svc.list_dbs(ctx.data):
            print(db)


def service_arguments(p: Parser) -> None:
    what = actions(p)
    for action, lines in (
            ("add", ('vykhukhol service add news --db main --title "Our news"',
                     'vykhukhol service add lessons --db main --title "Ten lessons" '
                     '--send-window "0 9-18 * * 1-5"')),
            ("edit", ('vykhukhol service edit news --from-name "Anna from Example"',
                      "vykhukhol service edit news --public no"))):
        a = add_command(what, action, f"{action} a service", *lines)
        a.add_argument("name", help=NAME_HELP)
        if action == "add":
            a.add_argument("--db", required=True, help="the DB it belongs to, e.g. main")
            a.add_argument("--title", required=True, help='what subscribers read, e.g. "Our news"')
        else:
            a.add_argument("--title", help='what subscribers read, e.g. "Our news"')
        a.add_argument("--from-name", help='sender name of its letters, e.g. "Anna from Example"')
        a.add_argument("--from-email", help="sender address, e.g. news@example.org "
                                            "(default: the mail.from_email setting)")
        a.add_argument("--delete-finished", choices=["yes", "no"],
                       help="yes: delete a subscriber who got the whole series; no: keep as done")
        a.add_argument("--send-window", metavar="EXPR",
                       help='minutes when series letters may go, in timezone, e.g. "0 9-18 * * 1-5"')
        a.add_argument("--public", choices=["yes", "no"],
                       help="yes (the default): every subscriber's own page offers it with a join "
                            "button; no: shown there only to its subscribers")
        a.add_argument("--form-language", choices=["yes", "no"],
                       help="yes: its subscribe form asks the reader's language (Russian or "
                            "English); no (the default): the browser's language is taken")
        a.add_argument("--form-fields", metavar="LIST",
                       help='the site\'s fields its subscribe form asks for, e.g. "city, plan" '
                            '("": none; `vykhukhol field list` names them)')
        a.add_argument("--confirm-subject", metavar="TEMPLATE",
                       help="the confirmation request's subject (empty: the default)")
        a.add_argument("--confirm-body", metavar="TEMPLATE",
                       help="the confirmation request's text; must contain {{ confirm_url }} "
                            "(empty: the default)")
    for action, summary in (
            ("enable", "enable a service: its series letters go out"),
            ("disable", "disable a service: its series letters wait; sign-ups, confirmations "
                        "and newsletters go on"),
            ("close", "close a service to newcomers: no sign-up, not offered on own pages; "
                      "those on it still get its letters"),
            ("open", "open a closed service to sign-ups again"),
            ("remove", "remove a service")):
        add_command(what, action, summary).add_argument("name", help=NAME_HELP)
    add_command(what, "resume", "let a braked service send again").add_argument(
        "name", help=NAME_HELP)
    a = add_command(what, "feed", "follow a feed: each new item becomes a newsletter; "
                                  "without a URL: the feed it follows",
                    "vykhukhol service feed news https://example.org/feed.xml --every 2h",
                    "vykhukhol service feed news            # what it follows",
                    "vykhukhol service feed news --off")
    a.add_argument("name", help=SERVICE_HELP)
    a.add_argument("url", nargs="?", help="the feed (RSS 2.0 or Atom), e.g. https://example.org/feed.xml")
    a.add_argument("--every", default="1h", help="how often it is read, at least 10m (default 1h)")
    a.add_argument("--template", metavar="FILE", help="the letter: a Subject: line, a blank line, "
                   "the text; templates with title, link, summary (default: a plain one)")
    a.add_argument("--off", action="store_true", help="follow no feed any more")
    add_command(what, "list", "the services, a header row first")


def _service_values(args) -> dict[str, str]:
    values = {}
    for option, key in (("title", "title"), ("from_name", "from_name"), ("from_email", "from_email"),
                        ("delete_finished", "delete_finished"), ("send_window", "send_window"),
                        ("public", "public"), ("confirm_subject", "confirm_subject"),
                        ("confirm_body", "confirm_body"), ("form_language", "form_language"),
                        ("form_fields", "form_fields")):
        value = getattr(args, option, None)
        if value is not None:
            values[key] = value
    return values


def cmd_service(ctx: Context, args) -> None:
    if args.action == "feed":
        return cmd_feed(ctx, args)
    ctx.settings()
    data = ctx.data
    if args.action == "add":
        svc.add_service(data, args.name, args.db, _service_values(args))
        print(f"service {args.name} added to DB {args.db}, disabled: its series letters wait "
              "until you enable it (vykhukhol service enable); sign-ups and newsletters do not wait")
    elif args.action == "edit":
        values = _service_values(args)
        if not values:
            raise BadInput("nothing to change: give at least one option")
        svc.edit_service(data, args.name, values)
        print(f"service {args.name} changed")
    elif args.action in ("enable", "disable"):
        svc.edit_service(data, args.name, {"enabled": "yes" if args.action == "enable" else "no"})
        print(f"service {args.name} enabled: its series letters go out" if args.action == "enable"
              else f"service {args.name} disabled: its series letters wait; sign-ups, "
                   "confirmations and newsletters go on")
    elif args.action in ("close", "open"):
        svc.edit_service(data, args.name, {"closed": "yes" if args.action == "close" else "no"})
        print(f"service {args.name} closed: it takes no sign-ups; those on it still get its "
              "letters" if args.action == "close" else f"service {args.name} open to sign-ups")
    elif args.action == "remove":
        svc.remove_service(data, args.name)
        print(f"service {args.name} removed")
    elif args.action == "resume":
        svc.find_service(data, args.name)  # NotFound: one clear line
        resume(ctx, brakes.SERVICE, args.name)
    else:
        print("\t".join(("#name", "db", "state", "signups", "letters", "title")))
        for service in svc.load_services(data):
            print("\t".join((service.name, service.db, "enabled" if service.enabled else "disabled",
                             "closed" if service.closed else "open",
                             str(svc.letter_count(service)), service.title)))


def cmd_feed(ctx: Context, args) -> None:
    """``service feed``: follow a site's feed, stop, or say what it follows."""
    ctx.settings()
    if args.off:
        if args.url or args.template:
            raise BadInput("--off takes no URL or --template")
        had = feed_settings.stop(ctx.data, args.name)
        print(f"service {args.name} follows no feed" + ("" if had else " (it followed none)"))
        return
    if not args.url:
        if args.template:
            raise BadInput("give the feed's URL with --template")
        now_ = feeds.standing(ctx.data, svc.find_service(ctx.data, args.name))
        if now_ is None:
            print(f"service {args.name} follows no feed")
            return
        print(f"url\t{now_.url}\nevery\t{format_duration(now_.every)}\n"
              f"read\t{format_time(now_.read_at)}\nread well\t{format_time(now_.ok_at)}")
        if now_.problem is not None:
            print(f"problem\t{now_.problem.message} (since {format_time(now_.problem_at)})")
        if now_.dropped is not None:
            print(f"dropped\t{now_.dropped.title}: {now_.dropped.why.message} "
                  f"({format_time(now_.dropped.at)})")
        return
    letter = None
    if args.template:
        try:
            letter = Path(args.template).read_text(encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"--template: cannot read {args.template}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise BadInput(f"--template: {args.template} is not UTF-8 text") from None
    feed = feed_settings.follow(ctx.data, args.name, args.url, args.every, letter)
    print(f"service {args.name} follows {feed.url}, read every {format_duration(feed.every)}; "
          "its first read marks the items there as seen, and each later one becomes a "
          "newsletter to its confirmed subscribers")


def letter_arguments(p: Parser) -> None:
    what = actions(p)
    a = add_command(what, "add", "add a letter at the end of a series",
                    'vykhukhol letter add news --subject "Welcome, {{ name }}" --delay 0s '
                    "--body-file welcome.txt",
                    'vykhukhol letter add news --subject "Lesson 1" --delay 1d --body-file lesson1.md '
                    "--markdown",
                    'vykhukhol letter add news --subject "Lesson 2" --delay 2d --body "…" --public')
    a.add_argument("service", help=SERVICE_HELP)
    a.add_argument("--subject", required=True, help='a template, e.g. "Lesson 2 for {{ name }}"')
    a.add_argument("--delay", required=True,
                   help="after the confirmation (letter 1) or the previous letter, e.g. 2d, 12h, 0s")
    letter_text_arguments(a, "publish it in the service's archive once it has gone out (Public: yes)",
                     "count its links' clicks through cgi/go.py (Clicks: yes; no address, no IP)")
    language_arguments(a)
    a = add_command(what, "language", "write (or --remove) a letter in another language: readers "
                                      "whose own language it is get it instead",
                    'vykhukhol letter language news 2 en --subject "Lesson 2" --body-file lesson2.en.txt',
                    "vykhukhol letter language news 2 en --remove")
    a.add_argument("service", help=SERVICE_HELP)
    a.add_argument("number", type=int, help="its position, e.g. 2")
    a.add_argument("language", choices=svc.LANGUAGES, help="the readers' language")
    a.add_argument("--subject", help='a template, e.g. "Lesson 2 for {{ name }}"')
    body = a.add_mutually_exclusive_group()
    body.add_argument("--body", help="the text, a template")
    body.add_argument("--body-file", help="a UTF-8 file with the text")
    body.add_argument("--remove", action="store_true",
                      help="remove it: those readers get the letter in the site's language")
    a.add_argument("--html-file", help="a UTF-8 file with an HTML version (optional)")
    a.add_argument("--markdown", action="store_true", help="the text is Markdown")
    add_command(what, "list", "the series, a header row first (also in: the other languages "
                              "each letter is written in)").add_argument(
        "service", help=SERVICE_HELP)
    a = add_command(what, "remove", "remove a letter; later letters move up",
                    "vykhukhol letter remove news 2")
    a.add_argument("service", help=SERVICE_HELP)
    a.add_argument("number", type=int, help="its position, e.g. 2")


def cmd_letter(ctx: Context, args) -> None:
    ctx.settings()
    service = svc.find_service(ctx.data, args.service)
    if args.action == "add":
        html = read_file(args.html_file, "--html-file") if args.html_file else None
        versions = language_versions(args)
        for subject, text, other_html in versions.values():  # checked before anything is written
            svc.check_letter(subject, "0s", text, other_html, args.markdown)
        number = svc.add_letter(service, args.subject, args.delay, letter_body(args), html,
                                public=args.public, clicks=args.clicks, markdown=args.markdown)
        for language, (subject, text, other_html) in versions.items():
            svc.set_version(service, number, language, subject, text, other_html, args.markdown)
        print(f"letter {number} added to {service.name}"
              + "".join(f", also in {language}" for language in versions))
        warn_unknown(args.subject, letter_body(args), html,
                     *(part for version in versions.values() for part in version))
    elif args.action == "language":
        cmd_letter_language(service, args)
    elif args.action == "remove":
        svc.remove_letter(service, args.number)
        print(f"letter {args.number} removed from {service.name}; later letters moved up")
    else:
        letters = svc.load_letters(service)  # a letter that does not parse: nothing printed
        print("\t".join(("#number", "delay", "subject", "html", "public", "also in")))
        for letter in letters:
            print(f"{letter.number}\t{format_duration(letter.delay)}\t{letter.subject}"
                  f"\t{'(markdown)' if letter.markdown else '(html)' if letter.html else '-'}"
                  f"\t{'public' if letter.public else '-'}\t{','.join(letter.versions) or '-'}")


def cmd_letter_language(service: svc.Service, args) -> None:
    """``letter language``: one letter's version in another language written or removed."""
    if args.remove:
        if not svc.remove_version(service, args.number, args.language):
            raise BadInput(f"letter {args.number} of {service.name} has no version in {args.language}")
        print(f"letter {args.number} of {service.name} removed in {args.language}: those readers "
              "get it in the site's language")
        return
    if args.subject is None or (args.body is None and args.body_file is None):
        raise BadInput("give --subject and --body or --body-file (or --remove)")
    html = read_file(args.html_file, "--html-file") if args.html_file else None
    text = letter_body(args)
    svc.set_version(service, args.number, args.language, args.subject, text, html, args.markdown)
    print(f"letter {args.number} of {service.name} written in {args.language}")
    warn_unknown(args.subject, text, html)


def archive_arguments(p: Parser) -> None:
    p.add_argument("action", choices=["on", "off", "build"],
                   help="on: publish its public letters; off: remove its pages; build: write them again")
    p.add_argument("service", help=SERVICE_HELP)
    p.epilog = examples("vykhukhol archive on news", "vykhukhol archive build news")


def cmd_archive(ctx: Context, args) -> None:
    from vykhukhol.archive import pages, publish  # off the command line's start

    settings = ctx.settings()
    if args.action == "build":
        service = svc.find_service(ctx.data, args.service)
        count = pages.build(ctx.data, settings, service)
    else:
        service = publish.switch(ctx.data, settings, args.service, args.action == "on")
        count = len(archive.entries(ctx.data, service.name))
    if service.archive:
        print(f"archive of {service.name} is on: {archive.index_url(settings, service.name)} "
              f"({numbered(count, 'letter')} published so far), written in "
              f"{archive.folder(settings) / service.name}")
    else:
        print(f"archive of {service.name} is off; its pages are removed")

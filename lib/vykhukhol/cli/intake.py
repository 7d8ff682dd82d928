"""What comes in from elsewhere: ``import-from`` (another tool's export) and
``service feed`` (a site's feed followed by a service)."""

from __future__ import annotations

import sys
from pathlib import Path

from vykhukhol.cli.common import Context
from vykhukhol.errors import BadInput


def _read_bytes(path: str, limit: int) -> bytes:
    """The file's bytes (``-``: standard input), refused over ``limit``."""
    try:
        if path == "-":
            raw = sys.stdin.buffer.read(limit + 1)
        else:
            with open(Path(path), "rb") as handle:
                raw = handle.read(limit + 1)
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from None
    if len(raw) > limit:
        raise BadInput(f"{path} is larger than {limit // (1024 * 1024)} MiB; nothing was imported")
    return raw


def cmd_import_from(ctx: Context, args) -> None:
    from vykhukhol import services as svc
    from vykhukhol.members import importers
    from vykhukhol.members.importers import outcome

    settings = ctx.settings()
    svc.find_service(ctx.data, args.service)  # an unknown service before the file is read
    raw = _read_bytes(args.file, importers.MAX_BYTES)
    reading = importers.read(args.tool, raw, Path(args.file).name)
    result = outcome.apply(ctx.data, settings, args.service, reading, dry_run=args.dry_run)
    for line in outcome.summary(result):
        print(line)
    for refused in result.refused[:importers.SHOWN_REFUSED]:
        print(f"{refused.where}: {refused.text!r}: {refused.why.message}", file=sys.stderr)
    if len(result.refused) > importers.SHOWN_REFUSED:
        print(f"… and {len(result.refused) - importers.SHOWN_REFUSED} more refused lines",
              file=sys.stderr)


def cmd_feed(ctx: Context, args) -> None:
    from vykhukhol import services as svc
    from vykhukhol.newsletters import feed_settings, feeds
    from vykhukhol.timeutil import format_duration, format_time

    settings = ctx.settings()
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
        return
    letter = None
    if args.template:
        try:
            letter = Path(args.template).read_text(encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"--template: cannot read {args.template}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise BadInput(f"--template: {args.template} is not UTF-8 text") from None
    feed = feed_settings.follow(ctx.data, args.name, args.url, args.every, letter, settings["language"])
    print(f"service {args.name} follows {feed.url}, read every {format_duration(feed.every)}; "
          "its first read marks the items there as seen, and each later one becomes a "
          "newsletter to its confirmed subscribers")

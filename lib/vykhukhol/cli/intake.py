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

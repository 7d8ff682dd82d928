"""``vykhukhol doctor [--json]``: the deliverability preflight
(:mod:`vykhukhol.mail.doctor`), one line per check and its fix below it.
Exits 1 when a check is wrong, so a monitor can run it; unknown (the
resolver did not answer) and warnings exit 0."""

from __future__ import annotations

import json

from vykhukhol.cli.common import Context


def cmd_doctor(ctx: Context, args) -> int:
    from vykhukhol.mail import doctor

    findings = doctor.examine(ctx.data, ctx.settings())
    if args.json:
        print(json.dumps([f.as_json() for f in findings], ensure_ascii=False, indent=1))
    else:
        for f in findings:
            print(f"{f.verdict.value:<8} {f.check:<9} {f.subject}: {f.found}")
            if f.fix:
                print(f"{'':<8} fix: {f.fix}")
    return 1 if doctor.worst(findings) is doctor.Verdict.WRONG else 0

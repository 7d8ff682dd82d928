"""``vykhukhol token``: the API's tokens (docs/using/api.md#api-tokens)."""

from __future__ import annotations

import time

from vykhukhol.cli.common import Context, Parser, actions, add_command
from vykhukhol.timeutil import parse_duration

SCOPE_NAMES = ("read", "subscribe", "manage", "send")  # the API's scopes (web/api/credentials.py)

NAME_HELP = "the token's name: lower-case letters, digits, - and _, e.g. shop"


def token_arguments(p: Parser) -> None:
    what = actions(p)
    a = add_command(what, "add", "make a token; prints it once (only its hash is kept)",
                    "vykhukhol token add shop --scopes subscribe",
                    "vykhukhol token add crm --scopes read,manage --ip 203.0.113.7 --expires 90d")
    a.add_argument("name", help=NAME_HELP)
    a.add_argument("--scopes", required=True, metavar="LIST",
                   help=f"comma-separated, of {', '.join(SCOPE_NAMES)} (`docs/using/api.md` says "
                        "what each allows)")
    a.add_argument("--ip", default="", metavar="LIST",
                   help="only calls from these addresses or networks, e.g. 203.0.113.7,10.0.0.0/8")
    a.add_argument("--expires", default="", metavar="DURATION", help="e.g. 90d (default: never)")
    a.add_argument("--rate", type=int, default=None, metavar="N",
                   help="calls a minute at most (default 60)")
    add_command(what, "list", "the tokens: name, scopes, addresses, created, last used, expires")
    add_command(what, "revoke", "the token stops working at once").add_argument("name", help=NAME_HELP)


def _time(stamp: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp)) if stamp else "-"


def cmd_token(ctx: Context, args) -> None:
    from vykhukhol.web.api import credentials as tokens  # off the command line's start

    data = ctx.data
    ctx.settings()  # an initialised site
    if args.action == "add":
        expires = parse_duration(args.expires) if args.expires else 0
        token, secret = tokens.add(data, args.name, args.scopes, args.ip, expires,
                                   tokens.RATE if args.rate is None else args.rate)
        print(f"token {token.name} made ({','.join(sorted(token.scopes))}); shown once, keep it secret:")
        print(secret)
    elif args.action == "list":
        print("name\tscopes\taddresses\trate\tcreated\tlast used\texpires")
        for t in tokens.load(data):
            print(f"{t.name}\t{','.join(sorted(t.scopes))}\t{','.join(t.ips) or 'any'}\t{t.rate}/min\t"
                  f"{_time(t.created)}\t{_time(t.last_used)}\t{_time(t.expires) if t.expires else 'never'}")
    else:
        tokens.revoke(data, args.name)
        print(f"token {args.name} revoked")

"""``vykhukhol token``: the API's tokens (docs/using/api.md#api-tokens)."""

from __future__ import annotations

import time

from vykhukhol.cli.common import Context, Parser, actions, add_command
from vykhukhol.timeutil import parse_duration
from vykhukhol.web.api import credentials as tokens

NAME_HELP = "the token's name: lower-case letters, digits, - and _, e.g. shop"


def token_arguments(p: Parser) -> None:
    what = actions(p)
    a = add_command(what, "add", "make a token; prints it once (only its hash is kept)",
                    "vykhukhol token add shop --scopes subscribe",
                    "vykhukhol token add crm --scopes read,manage --ip 203.0.113.7 --expires 90d")
    a.add_argument("name", help=NAME_HELP)
    a.add_argument("--scopes", required=True, metavar="LIST",
                   help="comma-separated: " + "; ".join(f"{k}: {v}" for k, v in tokens.SCOPES.items()))
    a.add_argument("--ip", default="", metavar="LIST",
                   help="only calls from these addresses or networks, e.g. 203.0.113.7,10.0.0.0/8")
    a.add_argument("--expires", default="", metavar="DURATION", help="e.g. 90d (default: never)")
    a.add_argument("--rate", type=int, default=tokens.RATE, metavar="N",
                   help=f"calls a minute at most (default {tokens.RATE})")
    add_command(what, "list", "the tokens: name, scopes, addresses, created, last used, expires")
    add_command(what, "revoke", "the token stops working at once").add_argument("name", help=NAME_HELP)


def _time(stamp: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp)) if stamp else "-"


def cmd_token(ctx: Context, args) -> None:
    data = ctx.data
    ctx.settings()  # an initialised site
    if args.action == "add":
        expires = parse_duration(args.expires) if args.expires else 0
        token, secret = tokens.add(data, args.name, args.scopes, args.ip, expires, args.rate)
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

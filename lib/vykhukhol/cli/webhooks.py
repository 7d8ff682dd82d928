"""``vykhukhol webhook``: the URLs told of the list's events
(docs/using/webhooks.md#webhooks)."""

from __future__ import annotations

import time

from vykhukhol.cli.common import Context, Parser, actions, add_command, numbered
from vykhukhol.files import events
from vykhukhol.webhooks import dispatch, endpoints, progress

NAME_HELP = "the webhook's name: lower-case letters, digits, - and _, e.g. shop"


def webhook_arguments(p: Parser) -> None:
    what = actions(p)
    a = add_command(what, "add", "a URL told of events; prints its signing secret once",
                    "vykhukhol webhook add shop https://shop.example.org/hooks/list",
                    "vykhukhol webhook add crm https://crm.example.org/in "
                    "--events subscriber.confirmed,subscriber.unsubscribed")
    a.add_argument("name", help=NAME_HELP)
    a.add_argument("url", help="https://... (http:// only to this machine, in debug mode)")
    a.add_argument("--events", default=endpoints.ALL, metavar="LIST",
                   help="* (all, the default) or a comma-separated list; `vykhukhol webhook events` "
                        "names them")
    a.add_argument("--allow-private", action="store_true",
                   help="allow a private, loopback or link-local address (a receiver on your own network)")
    add_command(what, "list", "the webhooks: name, state, events, URL")
    add_command(what, "events", "the events a webhook may ask for")
    for action, line in (("remove", "forget a webhook, its retries and its deliveries"),
                         ("enable", "switch a webhook on; it gets the events from now on"),
                         ("disable", "switch a webhook off; its events are not kept for it"),
                         ("test", "post a webhook.test event to it now and print the answer")):
        add_command(what, action, line).add_argument("name", help=NAME_HELP)
    a = add_command(what, "log", "a webhook's recent deliveries, newest first")
    a.add_argument("name", help=NAME_HELP)
    a.add_argument("--count", type=int, default=20, metavar="N", help="how many (default 20)")


def cmd_webhook(ctx: Context, args) -> None:
    data = ctx.data
    if args.action == "events":
        for kind, meaning in events.TYPES.items():
            print(f"{kind}\t{meaning}")
        return
    if args.action == "list":
        print("name\tstate\tevents\turl")
        for e in endpoints.load(data):
            print(f"{e.name}\t{'on' if e.enabled else 'off'}\t{e.events_text()}\t{e.url}")
        return
    if args.action == "add":
        endpoint = endpoints.add(data, args.name, args.url, args.events, args.allow_private)
        print(f"webhook {endpoint.name} added: {endpoint.url} ({endpoint.events_text()})")
        print(f"its signing secret (shown once; give it to the receiver): {endpoint.secret}")
        if ctx.settings()["mode"] == "working" and args.url.startswith("http://"):
            print("note: http:// webhooks are delivered only in debug mode")
        return
    if args.action == "remove":
        endpoints.remove(data, args.name)
        print(f"webhook {args.name} removed")
        return
    if args.action in ("enable", "disable"):
        on = args.action == "enable"
        endpoints.change(data, args.name, enabled=on)
        if on:
            progress.start_from_now(data, args.name)
        print(f"webhook {args.name} switched {'on' if on else 'off'}")
        return
    if args.action == "test":
        answer = dispatch.send_test(data, args.name, ctx.settings()["mode"] != "working")
        print(f"webhook {args.name}: {'delivered' if answer.ok else 'failed'}, {answer.text()} "
              f"in {answer.millis} ms")
        if not answer.ok:
            raise SystemExit(1)
        return
    if args.action == "log":
        if not any(e.name == args.name for e in endpoints.load(data)):
            from vykhukhol.errors import NotFound

            raise NotFound(f"no webhook named {args.name!r}")
        shown = progress.recent(data, args.name, max(1, args.count))
        print("time\tid\tevent\tattempt\toutcome\tms")
        for d in shown:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(d.time))
            print(f"{stamp}\t{d.id}\t{d.type}\t{d.attempt}\t{d.outcome}\t{d.millis}")
        waiting = progress.read_retries(data, args.name)
        if waiting:
            print(f"waiting for a retry: {numbered(len(waiting), 'event')}")

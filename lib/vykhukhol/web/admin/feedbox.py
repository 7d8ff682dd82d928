"""The service page's box of its feed: what it follows, its letter, the last
read and its problem, the last item dropped (the form posts to :mod:`.intake`)."""

from __future__ import annotations

from vykhukhol.i18n import duration
from vykhukhol.newsletters import feed_settings, feeds
from vykhukhol.timeutil import format_duration, format_time
from vykhukhol.web.admin.core import Admin, local_time


def feed_context(admin: Admin, service) -> dict:
    """What the service page shows of its feed: the settings, the letter, the last read."""
    now_ = feeds.standing(admin.data, service)
    feed = feed_settings.load(service)
    subject, body = (feed.letter(admin.lang) if feed else
                     (feed_settings.DEFAULT_SUBJECT, admin._(feed_settings.DEFAULT_BODY)))
    shown = None
    if now_ is not None:
        dropped = now_.dropped
        shown = {"url": now_.url, "every": format_duration(now_.every),  # as typed in the form
                 "every_shown": duration(admin.lang, now_.every),  # as read: «1 час»
                 "read": local_time(admin.settings, format_time(now_.read_at)) if now_.read_at
                 else "", "problem": now_.problem.text(admin.lang) if now_.problem else "",
                 "dropped": {"title": dropped.title, "problem": dropped.why.text(admin.lang),
                             "at": local_time(admin.settings, format_time(dropped.at))}
                 if dropped else None}
    return {"feed": shown, "feed_letter": f"Subject: {subject}\n\n{body}", "feed_tries": feeds.MAX_TRIES}

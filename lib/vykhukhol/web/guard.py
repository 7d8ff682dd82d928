"""``vykhukhol serve``'s defence against slow clients (docs/using/subscriber-pages.md#serve).

waitress hands a request to a worker thread only once it has all of it, so a
slow client holds no thread, but it holds a connection: waitress drops one
only when it has been silent for ``channel_timeout``, and stops accepting at
``connection_limit``. 120 clients each sending a header line every few seconds
kept every other visitor out for as long as they liked (slowloris).

So here every request has a deadline: its headers must be complete within
``HEADER_SECONDS`` of its first byte (or of the connection, for the first
request), its body within ``HEADER_SECONDS`` more plus the time the body takes
at ``MIN_BODY_RATE``. A connection past its deadline is closed. The
connection limit follows the process's open-file limit, and a server at its
limit closes the connection whose unfinished request is oldest rather than
stop accepting, so a flood of slow clients cannot keep a quick one out.

This works on waitress's channel and server classes (waitress 3), which is
why it is a module of its own: one place to look when waitress changes.
"""

from __future__ import annotations

import time

HEADER_SECONDS = 10.0       # from a request's first byte to the end of its headers
MIN_BODY_RATE = 16 * 1024   # bytes a second a body must at least arrive at
CHECK_EVERY = 1.0           # seconds between two looks at the deadlines
MAX_CONNECTIONS = 1000
MIN_CONNECTIONS = 50
SPARE_FILES = 64            # open files kept for the data files, logs and the ticker


def connection_limit() -> int:
    """Connections ``serve`` keeps open at once: half the open-file limit
    (each connection is one file), at least ``MIN_CONNECTIONS``, at most
    ``MAX_CONNECTIONS``."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return MIN_CONNECTIONS * 2
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(MIN_CONNECTIONS, min(MAX_CONNECTIONS, (soft - SPARE_FILES) // 2))


def guarded_server(app, **options):
    """``waitress.create_server(app, **options)`` with the deadlines and the
    eviction of the module's docstring (one listening address)."""
    import waitress
    from waitress.channel import HTTPChannel
    from waitress.server import TcpWSGIServer

    class Channel(HTTPChannel):
        """A connection that knows when its unfinished request began."""

        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.began: float | None = self.creation_time  # the first request starts now

        def received(self, data: bytes) -> bool:
            now = time.time()
            if self.request is None and self.began is None:
                self.began = now
            result = super().received(data)
            if self.request is None:
                # Nothing half-read: the keep-alive wait is channel_timeout's business.
                self.began = None
            return result

        def overdue(self, now: float) -> bool:
            """Whether the request being read has had its time."""
            if self.began is None or self.requests or self.will_close:
                return False
            parser = self.request
            allowed = HEADER_SECONDS
            if parser is not None and parser.headers_finished:
                allowed += HEADER_SECONDS + parser.content_length / MIN_BODY_RATE
            return now - self.began > allowed

    class Server(TcpWSGIServer):
        channel_class = Channel

        def maintenance(self, now: float) -> None:
            super().maintenance(now)
            for channel in list(self.active_channels.values()):
                if isinstance(channel, Channel) and channel.overdue(now):
                    channel.will_close = True

        def readable(self) -> bool:
            if self.accepting and len(self._map) >= self.adj.connection_limit:
                self._evict()
            return super().readable()

        def _evict(self) -> None:
            """At the limit: close the connection whose unfinished request is
            oldest (one at a time; it leaves the map on the loop's next turn)."""
            waiting = [c for c in self.active_channels.values() if isinstance(c, Channel)]
            if any(c.will_close for c in waiting):
                return  # one is already on its way out
            idle = [c for c in waiting if not c.requests and not c.total_outbufs_len]
            if idle:
                min(idle, key=lambda c: c.began or c.last_activity).will_close = True

    from waitress.adjustments import Adjustments

    options.setdefault("connection_limit", connection_limit())
    options.setdefault("cleanup_interval", CHECK_EVERY)
    # poll(), not select(): select() cannot watch a file numbered above 1024.
    options.setdefault("asyncore_use_poll", True)
    adj = Adjustments(**options)
    if len(adj.listen) != 1 or adj.unix_socket:
        return waitress.create_server(app, **options)  # several addresses: no guard
    return Server(app, adj=adj)

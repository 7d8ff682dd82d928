"""The public archive (docs/using/archive.md#archive): each service's public letters as static files.

``archive/<service>/`` beside ``cgi/`` (or the ``archive_dir`` setting) holds

* ``index.html`` — the published letters, newest first, with the feed linked;
* one page per letter: ``letter-NNN.html`` (series letter NNN) and
  ``news-<job>.html`` (a newsletter), and ``letter-NNN.en.html`` … for its
  version in another language (docs/using/archive.md#archive-languages);
* ``feed.atom`` — the same letters as an Atom feed (RFC 4287).

They are written by the run that publishes a letter, so a visitor costs the
host no Python at all: Apache serves them as files (``archive/.htaccess``),
``serve`` and Passenger through :func:`vykhukhol.web.archive.static`.

What is published: a service whose ``archive`` is on, and of it each series
letter marked ``Public: yes`` once it has first gone out (or, when it went
out while the archive was off, when the archive is turned on), and each
newsletter created ``--public`` once its job has ended. A letter is rendered as a
recipient with no name would read it: ``name`` and ``email`` are empty, and
the personal links (``unsubscribe_url``, ``manage_url``) are a neutral text,
so no page can name or act for anyone. Pages show the text part, escaped,
with its web addresses made links; no HTML of a letter reaches a page.

Where things are kept, in the data directory (never served):

* ``state/archive/<service>.txt`` — what is published: ``time<TAB>kind<TAB>ref``
  lines, ``kind`` ``letter`` (ref: its number) or ``news`` (ref: the job);
* ``letters/<job>.letter`` — a copy of every newsletter's letter, made when
  the job is created and kept after it ends, for the archive and for the
  recipients' own copies (``{{ web_url }}``, cgi/view.py); ``<job>.publish``
  beside it while a public newsletter waits for its end (``waiting``, then
  ``sent`` once a letter of it has gone out: a job that ends without one, all
  its recipients gone meanwhile, publishes nothing).
* ``letters/<job>.<language>.letter`` — the copy of its letter in another
  language, when it has one.

The archive's files are rebuilt whole (they are few) each time something is
published or the switch is moved; a page whose letter is no longer public or
no longer there disappears at that rebuild.

The store is three modules: :mod:`~vykhukhol.archive.locations` (where the
files are and the addresses of their pages), :mod:`~vykhukhol.archive.copies`
(the kept copies of newsletters) and :mod:`~vykhukhol.archive.listing` (what is
published); their names are offered here as well. :mod:`vykhukhol.archive.pages`
draws the files (from the templates in ``templates/archive/``);
:mod:`vykhukhol.archive.publish` decides when (after a run, at the switch). A
recipient's own copy is the web side's (:mod:`vykhukhol.web.archive`).
"""

from __future__ import annotations

from vykhukhol.archive.copies import (
    HTML_MARK,
    SENT,
    WAITING,
    Kept,
    forget_newsletter,
    forget_version,
    keep_newsletter,
    keep_version,
    kept_newsletter,
    kept_versions,
)
from vykhukhol.archive.listing import Entry, add_entries, entries, entries_path
from vykhukhol.archive.locations import (
    FILE_NAME,
    PREVIEW,
    folder,
    index_url,
    page_name,
    page_url,
    web_url,
)

__all__ = [
    "FILE_NAME", "HTML_MARK", "PREVIEW", "SENT", "WAITING", "Entry", "Kept", "add_entries",
    "entries", "entries_path", "folder", "forget_newsletter", "forget_version", "index_url", "keep_newsletter",
    "keep_version", "kept_newsletter", "kept_versions", "page_name", "page_url", "web_url",
]

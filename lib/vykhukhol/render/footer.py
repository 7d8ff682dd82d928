"""The footer of every list letter: why the reader gets it, the unsubscribe
link, the own-page link and the sender's postal address (docs/using/services.md#footer).

Series letters, newsletters and reminders carry it in both parts; the
confirmation request does not (it has its own link, and nobody is on a list
yet). The footer is a template like the letter (the same sandbox, the same
context plus ``postal_address``), looked up in this order:

1. the service's own folder: ``footer.txt`` / ``footer.html``;
2. the site's: ``data/footer.txt`` / ``data/footer.html`` (the admin's
   Settings page writes them);
3. the default of the letter's language, below.

A letter in another language than the site's (docs/using/services.md#letter-languages)
looks for ``footer.<language>.txt`` / ``.html`` in the same places instead
(``footer.en.txt``), since the site's own are written in the site's language;
a letter in the site's language takes such a file first too.

A letter whose template places ``{{ footer }}`` itself gets it there and not
again at its end; any other letter gets it appended (in HTML, before
``</body>`` when there is one).

This module finds and places the footer; it does not render letters
(compose does, with :func:`vykhukhol.render.render`) and writes no file.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

from vykhukhol import files

TEXT_NAME = "footer.txt"
HTML_NAME = "footer.html"

#: The footers shipped, by language: used while neither the service nor the site has its own.
DEFAULT_TEXT = {
    "en": ("-- \n"
           "You receive this letter because you subscribed to \"{{ service }}\".\n"
           "Unsubscribe: {{ unsubscribe_url }}\n"
           "Your subscriptions: {{ manage_url }}\n"
           "{% if postal_address %}{{ postal_address }}\n{% endif %}"),
    "ru": ("-- \n"
           "Вы получили это письмо, потому что подписались на рассылку «{{ service }}».\n"
           "Отписаться: {{ unsubscribe_url }}\n"
           "Ваши подписки: {{ manage_url }}\n"
           "{% if postal_address %}{{ postal_address }}\n{% endif %}"),
}
DEFAULT_HTML = {
    "en": ('<div class="vykhukhol-footer" style="margin-top:2em;border-top:1px solid #ccc;'
           'padding-top:.5em;font-size:small;color:#555">\n'
           '<p>You receive this letter because you subscribed to &ldquo;{{ service }}&rdquo;.</p>\n'
           '<p><a href="{{ unsubscribe_url }}">Unsubscribe</a> &middot; '
           '<a href="{{ manage_url }}">Your subscriptions</a></p>\n'
           '{% if postal_address %}<p>{{ postal_address }}</p>\n{% endif %}'
           '</div>\n'),
    "ru": ('<div class="vykhukhol-footer" style="margin-top:2em;border-top:1px solid #ccc;'
           'padding-top:.5em;font-size:small;color:#555">\n'
           '<p>Вы получили это письмо, потому что подписались на рассылку «{{ service }}».</p>\n'
           '<p><a href="{{ unsubscribe_url }}">Отписаться</a> &middot; '
           '<a href="{{ manage_url }}">Ваши подписки</a></p>\n'
           '{% if postal_address %}<p>{{ postal_address }}</p>\n{% endif %}'
           '</div>\n'),
}

# ``{{ footer }}``, ``{{- footer -}}``, ``{{ footer|safe }}``: the letter places it itself.
_PLACED = re.compile(r"\{\{-?\s*footer\b")
_BODY_END = re.compile(r"</body\s*>", re.IGNORECASE)


def site_footer_paths(data_root: Path) -> tuple[Path, Path]:
    """The site-wide footer files (text, HTML) of the data directory at ``data_root``."""
    return data_root / TEXT_NAME, data_root / HTML_NAME


@functools.lru_cache(maxsize=64)
def _read(path: str, stamp: tuple[int, int]) -> str:
    # Keyed by the file's mtime and size: a process reads each footer once, an
    # edit (admin or FTP) is seen by the next look (the next run: see sources()).
    return files.read_text(path, "") or ""


def _own(path: Path) -> str | None:
    """The file's text, or None when there is none (or it is only white space)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    text = _read(str(path), (st.st_mtime_ns, st.st_size))
    return text if text.strip() else None


#: The footers found during one run (its id, then what was found by folder):
#: four stat calls a letter saved; the next run looks again.
_RUN: tuple[str, dict[tuple[Path | None, Path, str], tuple[str, str]]] = ("", {})


def sources(service_folder: Path | None, data_root: Path, lang: str,
            run_id: str = "", site_lang: str | None = None) -> tuple[str, str]:
    """The footer templates (text, HTML) a letter in ``lang`` of the service in
    ``service_folder`` gets: the service's own, else the site's, else the default.
    ``site_lang``: the site's language, when the letter may be in another
    (then only the files of ``lang`` are its own; None: ``lang`` is the site's).
    With ``run_id`` (the sender's run) they are looked up once for that run."""
    global _RUN
    site_lang = site_lang or lang
    if not run_id:
        return _sources(service_folder, data_root, lang, site_lang)
    current = _RUN  # read once: under `vykhukhol serve` another thread may start a run
    if current[0] != run_id:
        current = _RUN = (run_id, {})
    key = (service_folder, data_root, f"{lang}/{site_lang}")
    found = current[1].get(key)
    if found is None:
        found = current[1][key] = _sources(service_folder, data_root, lang, site_lang)
    return found


def _sources(service_folder: Path | None, data_root: Path, lang: str,
             site_lang: str) -> tuple[str, str]:
    own = lang == site_lang  # the files without a language are in the site's
    lang = lang if lang in DEFAULT_TEXT else "en"
    folders = [folder for folder in (service_folder, data_root) if folder is not None]
    text = _first(folders, TEXT_NAME, lang, own) or DEFAULT_TEXT[lang]
    html = _first(folders, HTML_NAME, lang, own) or DEFAULT_HTML[lang]
    return text, html


def _first(folders: list[Path], name: str, lang: str, own: bool) -> str | None:
    """The first footer file of ``lang`` there is, folder by folder
    (``footer.<lang>.txt``, then ``footer.txt`` when ``own``)."""
    stem, _, suffix = name.rpartition(".")
    for folder in folders:
        found = _own(folder / f"{stem}.{lang}.{suffix}") or (_own(folder / name) if own else None)
        if found:
            return found
    return None


@functools.lru_cache(maxsize=256)
def placed(source: str) -> bool:
    """Whether the letter template ``source`` places ``{{ footer }}`` itself."""
    return bool(_PLACED.search(source))


def add_text(body: str, footer: str) -> str:
    """The text part with the footer after it, one blank line between."""
    if not footer.strip():
        return body
    return body.rstrip("\n") + "\n\n" + footer if body.strip() else footer


def add_html(body: str, footer: str) -> str:
    """The HTML part with the footer before its last ``</body>``, else at its end."""
    if not footer.strip():
        return body
    ends = list(_BODY_END.finditer(body))
    if not ends:
        return body.rstrip("\n") + "\n" + footer
    at = ends[-1].start()
    return body[:at] + footer + body[at:]

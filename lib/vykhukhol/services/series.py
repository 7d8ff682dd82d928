"""The letters of a service's series: their files and their rules.

A series is ``<service>/letters/NNN.txt`` (+ optional ``NNN.html``): an
e-mail-like file, header lines (Subject, Delay, Public, Clicks, Format), a blank
line, the body. ``Format: markdown`` says the body is Markdown, which makes
both parts (:mod:`vykhukhol.render.markdown`); a file without it is plain text,
as every letter was before. A change to the series forgets the service's
next-due summary.

Beside a letter, ``NNN.en.txt`` / ``NNN.ru.txt`` (+ ``.html``) is the same
letter in another language (docs/using/services.md#letter-languages): the same
number, delay and Public and Clicks marks, its own subject, body and Format. A
reader gets the version in their own language, else the one in the site's,
else the letter itself; it is still one letter of the series (one ``sent``).
"""

from __future__ import annotations

from vykhukhol import files
from vykhukhol.datadir import DataDir
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.i18n import LANGUAGES  # a letter's versions: the site's languages
from vykhukhol.services.catalog import Record, yes_no
from vykhukhol.timeutil import format_duration, parse_duration

TYPE_CHECKING = False  # typing itself is not imported: every CGI page loads this module
if TYPE_CHECKING:
    from pathlib import Path

    from vykhukhol.services.catalog import Service

MAX_LETTERS = 999
MARKDOWN = "markdown"  # the value of a letter's Format header when its body is Markdown


class Letter(Record):
    """One letter of a series: its number, subject, delay (seconds) and bodies."""

    _fields = ("number", "subject", "delay", "body", "html", "headers", "versions")

    def __init__(self, number: int, subject: str, delay: int, body: str, html: str | None = None,
                 headers: dict[str, str] | None = None,
                 versions: dict[str, Letter] | None = None) -> None:
        self.number = number
        self.subject = subject
        self.delay = delay  # seconds
        self.body = body
        self.html = html
        self.headers = {} if headers is None else headers
        self.versions = {} if versions is None else versions  # language → the letter in it

    def for_reader(self, language: str) -> tuple[Letter, str | None]:
        """The letter a reader of ``language`` gets and the language it is in
        (None: the letter itself, in the site's language): its version in
        that language, with this letter's number, delay and marks."""
        version = self.versions.get(language)
        if version is None:
            return self, None
        headers = {key: value for key, value in self.headers.items() if key != "format"}
        if version.markdown:
            headers["format"] = MARKDOWN
        return Letter(self.number, version.subject, self.delay, version.body, version.html,
                      headers), language

    @property
    def public(self) -> bool:
        """Marked ``Public: yes``: it goes to the service's public archive."""
        try:
            return yes_no(self.headers.get("public", "no"), "Public")
        except BadInput:
            return False

    @property
    def clicks(self) -> bool:
        """Marked ``Clicks: yes``: its links are counted (vykhukhol.newsletters.clicks)."""
        try:
            return yes_no(self.headers.get("clicks", "no"), "Clicks")
        except BadInput:
            return False

    @property
    def markdown(self) -> bool:
        """Marked ``Format: markdown``: the body is Markdown (docs/using/services.md#markdown)."""
        return self.headers.get("format", "").strip().lower() == MARKDOWN

    def parts(self) -> tuple[str, str | None]:
        """The templates (text, HTML) its letters are made of."""
        return sent_parts(self.body, self.html, self.markdown)


def parse_letter(text: str, number: int = 0) -> Letter:
    """An e-mail-like letter file: header lines, a blank line, the body."""
    head, sep, body = text.replace("\r\n", "\n").partition("\n\n")
    if not sep:
        head, body = text, ""
    headers = {}
    for line in head.split("\n"):
        if not line.strip():
            continue
        key, colon, value = line.partition(":")
        if not colon:
            raise BadInput("letter {number}: header line {line} has no ':'", number=number,
                           line=repr(line[:40]))
        headers[key.strip().lower()] = value.strip()
    subject = headers.get("subject", "")
    try:
        delay = parse_duration(headers.get("delay", "0s"))
    except BadInput as exc:
        raise BadInput("letter {file}: Delay: {reason}", file=f"{number:03d}.txt", reason=exc) from None
    return Letter(number=number, subject=subject, delay=delay, body=body, headers=headers)


def format_letter(letter: Letter) -> str:
    flags = ("Public: yes\n" if letter.public else "") + ("Clicks: yes\n" if letter.clicks else "") \
        + ("Format: markdown\n" if letter.markdown else "")
    return f"Subject: {letter.subject}\nDelay: {format_duration(letter.delay)}\n{flags}\n{letter.body}"


def given_html(html: str | None) -> str | None:
    """The HTML alternative as given, or None when it is only white space: one
    Enter in the HTML box, or a newline-only file uploaded by FTP, is no HTML,
    never a blank part that mail programs show instead of the text."""
    return html if html and html.strip() else None


def sent_parts(body: str, html: str | None, markdown: bool) -> tuple[str, str | None]:
    """The templates (text, HTML) of a letter as it is sent: as written, or
    made from its Markdown (docs/using/services.md#markdown)."""
    if not markdown:
        return body, given_html(html)
    from vykhukhol.render import markdown as md  # markdown-it: only for a Markdown letter

    return md.parts(body or "")


def check_parts(subject: str, body: str, html: str | None, markdown: bool = False) -> None:
    """Refuse (BadInput) a letter whose templates cannot be made, as when it is sent."""
    from vykhukhol import render  # Jinja2 only where templates are checked (not on idle runs)

    if markdown and given_html(html):
        raise BadInput("HTML: a Markdown letter makes its HTML part itself; leave it empty")
    budget = render.Budget()  # as when it is sent: the parts share one budget
    render.check_template(subject, "subject", budget=budget)
    render.check_syntax(body or "", "text")  # its errors name the lines as written
    text, html = sent_parts(body or "", html, markdown)
    render.check_template(text, "text", budget=budget)
    if html:
        render.check_template(html, "HTML", html=True, budget=budget)


def check_letter(subject: str, delay: str, body: str, html: str | None,
                 markdown: bool = False) -> tuple[str, int]:
    subject = (subject or "").strip()
    if not subject:
        raise BadInput("subject: must not be empty")
    if any(c in subject for c in "\r\n"):
        raise BadInput("subject: must be one line")
    seconds = parse_duration(delay)
    check_parts(subject, body, html, markdown)
    return subject, seconds


def _letter_paths(service: Service) -> list[Path]:
    if not service.letters_dir.is_dir():
        return []
    return sorted(p for p in service.letters_dir.glob("[0-9][0-9][0-9].txt"))


def load_letters(service: Service) -> list[Letter]:
    """The series in order, each with its versions in other languages; a
    letter file that does not parse is BadInput naming it."""
    letters = []
    for index, path in enumerate(_letter_paths(service), start=1):
        letter = _read_letter(path, index)
        for language in LANGUAGES:
            version_path = _version_path(path, language)
            if version_path.exists():
                letter.versions[language] = _read_letter(version_path, index)
        letters.append(letter)
    return letters


def _read_letter(path: Path, number: int) -> Letter:
    letter = parse_letter(files.read_text(path, "") or "", number)
    html_path = path.with_suffix(".html")
    letter.html = given_html(files.read_text(html_path)) if html_path.exists() else None
    return letter


def _version_path(path: Path, language: str) -> Path:
    """``NNN.<language>.txt`` beside the letter ``NNN.txt`` at ``path``."""
    return path.with_name(f"{path.stem}.{language}.txt")


def letter_count(service: Service) -> int:
    return len(_letter_paths(service))


def letter_delays(service: Service) -> list[int]:
    """Only the delays, for the sender's due computation (cheap: headers only).
    A letter whose Delay cannot be read is BadInput naming it, never "send now"."""
    delays = []
    for path in _letter_paths(service):
        delay = 0
        for line in files.read_lines(path):
            if not line.strip():
                break
            key, _, value = line.partition(":")
            if key.strip().lower() == "delay":
                try:
                    delay = parse_duration(value.strip())
                except BadInput as exc:
                    raise BadInput(f"{service.name}: letter {path.name}: Delay: {exc.message}") from None
        delays.append(delay)
    return delays


def _write_letter(service: Service, number: int, letter: Letter) -> None:
    path = service.letters_dir / f"{number:03d}.txt"
    _write_file(path, format_letter(letter), letter.html)
    for language in LANGUAGES:
        version = letter.versions.get(language)
        if version is None:
            _remove_file(_version_path(path, language))
        else:
            _write_file(_version_path(path, language), format_version(version), version.html)


def _write_file(path: Path, text: str, html: str | None) -> None:
    files.atomic_write(path, text)
    html_path = path.with_suffix(".html")
    if html:
        files.atomic_write(html_path, html)
    else:
        files.remove(html_path)


def _remove_file(path: Path) -> None:
    files.remove(path.with_suffix(".html"))
    files.remove(path)


def format_version(letter: Letter) -> str:
    """A letter's version in another language: its own subject, Format and body."""
    return f"Subject: {letter.subject}\n" + ("Format: markdown\n" if letter.markdown else "") \
        + f"\n{letter.body}"


def add_letter(service: Service, subject: str, delay: str, body: str,
               html: str | None = None, position: int | None = None, public: bool = False,
               clicks: bool = False, markdown: bool = False) -> int:
    """Add a letter at the end (or at ``position``); returns its number."""
    html = given_html(html)
    subject, seconds = check_letter(subject, delay, body, html, markdown)
    with files.record_lock(service.letters_dir / "series"):
        letters = load_letters(service)
        if len(letters) >= MAX_LETTERS:
            raise BadInput("a series has at most {count} letters", count=MAX_LETTERS)
        new = Letter(0, subject, seconds, body or "", html or None,
                     _public(public, clicks, markdown))
        at = len(letters) + 1 if position is None else max(1, min(position, len(letters) + 1))
        letters.insert(at - 1, new)
        _save_series(service, letters)
    return at


def edit_letter(service: Service, number: int, subject: str, delay: str, body: str,
                html: str | None = None, public: bool = False, clicks: bool = False,
                markdown: bool = False) -> None:
    html = given_html(html)
    subject, seconds = check_letter(subject, delay, body, html, markdown)
    with files.record_lock(service.letters_dir / "series"):
        letters = load_letters(service)
        if not 1 <= number <= len(letters):
            raise NotFound(f"service {service.name!r} has no letter {number}")
        _write_letter(service, number, Letter(number, subject, seconds, body or "", html or None,
                                              _public(public, clicks, markdown),
                                              letters[number - 1].versions))
        _letters_changed(service)


def set_version(service: Service, number: int, language: str, subject: str, body: str,
                html: str | None = None, markdown: bool = False) -> None:
    """Letter ``number`` in ``language`` (written anew, or for the first time)."""
    html = given_html(html)
    language = check_language(language)
    subject, _ = check_letter(subject, "0s", body, html, markdown)
    with files.record_lock(service.letters_dir / "series"):
        letters = load_letters(service)
        if not 1 <= number <= len(letters):
            raise NotFound(f"service {service.name!r} has no letter {number}")
        path = _letter_paths(service)[number - 1]
        _write_file(_version_path(path, language),
                    format_version(Letter(number, subject, 0, body or "", html,
                                          _public(False, markdown=markdown))), html)


def remove_version(service: Service, number: int, language: str) -> bool:
    """Letter ``number`` without its version in ``language``; False: it had none."""
    language = check_language(language)
    with files.record_lock(service.letters_dir / "series"):
        paths = _letter_paths(service)
        if not 1 <= number <= len(paths):
            raise NotFound(f"service {service.name!r} has no letter {number}")
        path = _version_path(paths[number - 1], language)
        had = path.exists()
        _remove_file(path)
    return had


def check_language(language: str) -> str:
    """A language a letter may be written in, or BadInput naming them."""
    if language not in LANGUAGES:
        raise BadInput("language {language}: use one of {languages}", language=language,
                       languages=", ".join(LANGUAGES))
    return language


def _public(public: bool, clicks: bool = False, markdown: bool = False) -> dict[str, str]:
    """The header lines a letter's boxes give it (``Public: yes``, ``Clicks: yes``,
    ``Format: markdown``)."""
    return {**({"public": "yes"} if public else {}), **({"clicks": "yes"} if clicks else {}),
            **({"format": MARKDOWN} if markdown else {})}


def remove_letter(service: Service, number: int) -> None:
    with files.record_lock(service.letters_dir / "series"):
        letters = load_letters(service)
        if not 1 <= number <= len(letters):
            raise NotFound(f"service {service.name!r} has no letter {number}")
        del letters[number - 1]
        _save_series(service, letters)


def move_letter(service: Service, number: int, to: int) -> None:
    with files.record_lock(service.letters_dir / "series"):
        letters = load_letters(service)
        if not 1 <= number <= len(letters) or not 1 <= to <= len(letters):
            raise NotFound(f"service {service.name!r} has no letter {number} or {to}")
        letters.insert(to - 1, letters.pop(number - 1))
        _save_series(service, letters)


def _save_series(service: Service, letters: list[Letter]) -> None:
    files.make_folder(service.letters_dir)
    for number, letter in enumerate(letters, start=1):
        _write_letter(service, number, letter)
    for stale in _letter_paths(service)[len(letters):]:
        for language in LANGUAGES:
            _remove_file(_version_path(stale, language))
        _remove_file(stale)
    _letters_changed(service)


def _letters_changed(service: Service) -> None:
    """The series changed: the next-due summary, computed under the old
    letters, is forgotten (the writer keeps what depends on its file true)."""
    from vykhukhol.services.due_summary import forget_due

    # A service's folder is <data>/services/<db>/<name> (DataDir.db).
    forget_due(DataDir(service.folder.parents[2]), service.name)

"""DBs, services and the letters of a series: their files and their rules.

``data/services/<db>/db.free`` is the DB's rename lock; a service is the folder
``<db>/<service>/`` with ``service.ini``, ``subscribers.txt`` and
``letters/NNN.txt`` (+ optional ``NNN.html``). Service names are unique across
DBs, because links name the service alone.
"""

from __future__ import annotations

import configparser
import os

from vykhukhol import files
from vykhukhol.addresses import check_mailbox, clean_name
from vykhukhol.datadir import DataDir, check_name
from vykhukhol.errors import BadInput, Conflict, NotFound, StorageError
from vykhukhol.timeutil import format_duration, parse_duration

TYPE_CHECKING = False  # typing itself is not imported: every CGI page loads this module
if TYPE_CHECKING:
    from pathlib import Path

LOCK_STEM = "db"
MAX_LETTERS = 999
SERVICE_FIELDS = ("title", "enabled", "from_name", "from_email", "delete_finished",
                  "send_window", "confirm_subject", "confirm_body", "public", "archive")


def _yes_no(value: str, what: str) -> bool:
    value = (value or "").strip().lower()
    if value in ("yes", "true", "1", "on"):
        return True
    if value in ("no", "false", "0", "off", ""):
        return False
    raise BadInput("{what}: must be yes or no", what=what)


class _Record:
    """Compared and shown by its fields, like a dataclass; a plain class, because
    :mod:`dataclasses` imports :mod:`inspect`, a cost every CGI page would pay
    (issue 20)."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclasses were

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({shown})"


class Service(_Record):
    """One service as its folder and ``service.ini`` describe it."""

    _fields = ("name", "db", "folder", "title", "enabled", "from_name", "from_email",
               "delete_finished", "send_window", "confirm_subject", "confirm_body", "public",
               "archive")

    def __init__(self, name: str, db: str, folder: Path, title: str = "", enabled: bool = False,
                 from_name: str = "", from_email: str = "", delete_finished: bool = False,
                 send_window: str = "", confirm_subject: str = "", confirm_body: str = "",
                 public: bool = True, archive: bool = False) -> None:
        self.name = name
        self.db = db
        self.folder = folder
        self.title = title
        self.enabled = enabled
        self.from_name = from_name
        self.from_email = from_email
        self.delete_finished = delete_finished
        self.send_window = send_window
        self.confirm_subject = confirm_subject
        self.confirm_body = confirm_body
        self.public = public  # listed on every subscriber's own page, with a join button (SPEC 7)
        self.archive = archive  # its public letters are published (vykhukhol.archive)

    @property
    def subscribers_path(self) -> Path:
        return self.folder / "subscribers.txt"

    @property
    def letters_dir(self) -> Path:
        return self.folder / "letters"

    @property
    def ini_path(self) -> Path:
        return self.folder / "service.ini"


class Letter(_Record):
    """One letter of a series: its number, subject, delay (seconds) and bodies."""

    _fields = ("number", "subject", "delay", "body", "html", "headers")

    def __init__(self, number: int, subject: str, delay: int, body: str, html: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        self.number = number
        self.subject = subject
        self.delay = delay  # seconds
        self.body = body
        self.html = html
        self.headers = {} if headers is None else headers

    @property
    def public(self) -> bool:
        """Marked ``Public: yes``: it goes to the service's public archive."""
        try:
            return _yes_no(self.headers.get("public", "no"), "Public")
        except BadInput:
            return False

    @property
    def clicks(self) -> bool:
        """Marked ``Clicks: yes``: its links are counted (vykhukhol.newsletters.clicks)."""
        try:
            return _yes_no(self.headers.get("clicks", "no"), "Clicks")
        except BadInput:
            return False


def db_lock(data: DataDir, db: str) -> files.RenameLock:
    return files.RenameLock(data.db(db), LOCK_STEM)


def list_dbs(data: DataDir) -> list[str]:
    if not data.services.is_dir():
        return []
    return sorted(entry.name for entry in data.services.iterdir()
                  if entry.is_dir() and _valid(entry.name))


def _valid(name: str) -> bool:
    try:
        check_name(name)
    except BadInput:
        return False
    return True


def add_db(data: DataDir, db: str) -> None:
    folder = data.db(db)
    if folder.exists():
        raise Conflict("DB {db} exists already", db=repr(db))
    try:
        files.make_folder(folder)
    except OSError as exc:
        raise StorageError(f"cannot create DB {db!r}: {exc.strerror}") from exc
    db_lock(data, db).ensure()


def remove_db(data: DataDir, db: str) -> None:
    folder = data.db(db)
    if not folder.is_dir():
        raise NotFound("no DB {db}", db=repr(db))
    if any(load_services(data, db)):
        raise Conflict("DB {db} still has services; remove them first", db=repr(db))
    import shutil  # not at the top: a public page loads this module

    shutil.rmtree(folder)


def load_services(data: DataDir, db: str | None = None) -> list[Service]:
    """Every service (of one DB, or of all), sorted by name."""
    found = []
    for db_name in ([db] if db else list_dbs(data)):
        folder = data.db(db_name)
        if not folder.is_dir():
            continue
        for entry in folder.iterdir():
            if entry.is_dir() and _valid(entry.name) and (entry / "service.ini").is_file():
                found.append(_load(entry, db_name))
    return sorted(found, key=lambda s: s.name)


def find_service(data: DataDir, name: str) -> Service:
    check_name(name, "service name")
    for db_name in list_dbs(data):
        folder = data.db(db_name) / name
        if (folder / "service.ini").is_file():
            return _load(folder, db_name)
    raise NotFound("no service {name}", name=repr(name))


def _load(folder: Path, db: str) -> Service:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(files.read_text(folder / "service.ini", "") or "")
    except configparser.Error:
        pass  # an unreadable service.ini reads as a disabled service with defaults
    section = parser["service"] if parser.has_section("service") else {}
    get = section.get if section else (lambda key, default="": default)
    service = Service(name=folder.name, db=db, folder=folder)
    service.title = get("title", "") or folder.name
    for flag, default in (("enabled", "no"), ("delete_finished", "no"), ("public", "yes"),
                          ("archive", "no")):
        try:
            setattr(service, flag, _yes_no(get(flag, default), flag))
        except BadInput:
            setattr(service, flag, False)  # a hand-edited value nobody can read: the safe side
    service.from_name = get("from_name", "")
    service.from_email = get("from_email", "")
    service.send_window = get("send_window", "")
    service.confirm_subject = get("confirm_subject", "").replace("\\n", "\n")
    service.confirm_body = get("confirm_body", "").replace("\\n", "\n")
    return service


def check_fields(values: dict[str, str]) -> dict[str, str]:
    """Validate service fields as given by a form or the CLI; return them normalised."""
    from vykhukhol import render
    from vykhukhol.services import schedule

    out = {}
    for key, value in values.items():
        if key not in SERVICE_FIELDS:
            raise BadInput(f"unknown service field {key!r}")
        value = "" if value is None else str(value)
        if key == "title":
            value = clean_name(value)
            if not value:
                raise BadInput("title: must not be empty")
        elif key == "from_name":
            value = clean_name(value)
        elif key == "from_email":
            value = check_mailbox(value) if value.strip() else ""
        elif key in ("enabled", "delete_finished", "public", "archive"):
            value = "yes" if _yes_no(value, key) else "no"
        elif key == "send_window":
            value = schedule.validate(value) if value.strip() else ""
        elif key in ("confirm_subject", "confirm_body"):
            if key == "confirm_subject" and any(c in value for c in "\r\n"):
                raise BadInput("confirm_subject: must be one line")
            render.check_template(value, key)
            if key == "confirm_body" and value.strip() and not render.uses(value, "confirm_url"):
                # Saved without it, every new subscriber would get a letter with no way to confirm.
                raise BadInput("confirm_body: must contain the {link} link, or the subscriber "
                               "cannot confirm", link="{{ confirm_url }}")
        out[key] = value
    return out


def _write_ini(service: Service, values: dict[str, str]) -> None:
    current = {key: "" for key in SERVICE_FIELDS}
    current.update({
        "title": service.title, "enabled": "yes" if service.enabled else "no",
        "from_name": service.from_name, "from_email": service.from_email,
        "delete_finished": "yes" if service.delete_finished else "no",
        "send_window": service.send_window, "confirm_subject": service.confirm_subject,
        "confirm_body": service.confirm_body, "public": "yes" if service.public else "no",
        "archive": "yes" if service.archive else "no",
    })
    current.update(values)
    lines = ["[service]\n"]
    for key in SERVICE_FIELDS:
        text = current[key].replace("\r", "").replace("\n", "\\n")
        lines.append(f"{key} = {text}\n")
    files.atomic_write(service.ini_path, lines)


def add_service(data: DataDir, name: str, db: str, values: dict[str, str]) -> Service:
    check_name(name, "service name")
    if not data.db(db).is_dir():
        raise NotFound("no DB {db}", db=repr(db))
    values = check_fields({"title": name, **values})
    try:
        find_service(data, name)
    except NotFound:
        pass
    else:
        raise Conflict("a service named {name} exists already (names are unique across DBs)",
                       name=repr(name))
    folder = data.db(db) / name
    try:
        folder.mkdir(mode=files.FOLDER_MODE)
        (folder / "letters").mkdir(mode=files.FOLDER_MODE)
    except FileExistsError:
        raise Conflict("a folder named {name} exists already in DB {db}", name=repr(name),
                       db=repr(db)) from None
    except OSError as exc:
        raise StorageError(f"cannot create service {name!r}: {exc.strerror}") from exc
    service = Service(name=name, db=db, folder=folder)
    _write_ini(service, values)
    from vykhukhol.services.subscribers import (
        HEADER,  # the subscriber files' module: not for a GET page
    )

    files.atomic_write(service.subscribers_path, HEADER + "\n")
    return _load(folder, db)


def edit_service(data: DataDir, name: str, values: dict[str, str]) -> Service:
    service = find_service(data, name)
    values = check_fields(values)
    with files.record_lock(service.ini_path):
        _write_ini(_load(service.folder, service.db), values)
    return _load(service.folder, service.db)


def remove_service(data: DataDir, name: str) -> None:
    service = find_service(data, name)
    trash = service.folder.with_name(f".removed-{name}-{os.getpid()}")
    try:
        os.rename(service.folder, trash)  # one atomic step: the service is gone at once
        import shutil

        shutil.rmtree(trash)
    except OSError as exc:
        raise StorageError(f"cannot remove service {name!r}: {exc.strerror}") from exc
    from vykhukhol.services import due_summary

    due_summary.forget_due(data, name)


# --- letters of a series ---------------------------------------------------

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
    flags = ("Public: yes\n" if letter.public else "") + ("Clicks: yes\n" if letter.clicks else "")
    return f"Subject: {letter.subject}\nDelay: {format_duration(letter.delay)}\n{flags}\n{letter.body}"


def given_html(html: str | None) -> str | None:
    """The HTML alternative as given, or None when it is only white space: one
    Enter in the HTML box, or a newline-only file uploaded by FTP, is no HTML
    (SPEC 9), never a blank part that mail programs show instead of the text."""
    return html if html and html.strip() else None


def check_letter(subject: str, delay: str, body: str, html: str | None) -> tuple[str, int]:
    from vykhukhol import render  # Jinja2 only where templates are checked (not on idle runs)

    subject = (subject or "").strip()
    if not subject:
        raise BadInput("subject: must not be empty")
    if any(c in subject for c in "\r\n"):
        raise BadInput("subject: must be one line")
    seconds = parse_duration(delay)
    budget = render.Budget()  # as when it is sent: the parts share one budget
    render.check_template(subject, "subject", budget=budget)
    render.check_template(body or "", "text", budget=budget)
    if html:
        render.check_template(html, "HTML", html=True, budget=budget)
    return subject, seconds


def _letter_paths(service: Service) -> list[Path]:
    if not service.letters_dir.is_dir():
        return []
    return sorted(p for p in service.letters_dir.glob("[0-9][0-9][0-9].txt"))


def load_letters(service: Service) -> list[Letter]:
    """The series in order; a letter file that does not parse is BadInput naming it."""
    letters = []
    for index, path in enumerate(_letter_paths(service), start=1):
        letter = parse_letter(files.read_text(path, "") or "", index)
        html_path = path.with_suffix(".html")
        letter.html = given_html(files.read_text(html_path)) if html_path.exists() else None
        letters.append(letter)
    return letters


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
    files.atomic_write(path, format_letter(letter))
    html_path = path.with_suffix(".html")
    if letter.html:
        files.atomic_write(html_path, letter.html)
    else:
        files.remove(html_path)


def add_letter(service: Service, subject: str, delay: str, body: str,
               html: str | None = None, position: int | None = None, public: bool = False,
               clicks: bool = False) -> int:
    """Add a letter at the end (or at ``position``); returns its number."""
    html = given_html(html)
    subject, seconds = check_letter(subject, delay, body, html)
    with files.record_lock(service.letters_dir / "series"):
        letters = load_letters(service)
        if len(letters) >= MAX_LETTERS:
            raise BadInput("a series has at most {count} letters", count=MAX_LETTERS)
        new = Letter(0, subject, seconds, body or "", html or None, _public(public, clicks))
        at = len(letters) + 1 if position is None else max(1, min(position, len(letters) + 1))
        letters.insert(at - 1, new)
        _save_series(service, letters)
    return at


def edit_letter(service: Service, number: int, subject: str, delay: str, body: str,
                html: str | None = None, public: bool = False, clicks: bool = False) -> None:
    html = given_html(html)
    subject, seconds = check_letter(subject, delay, body, html)
    with files.record_lock(service.letters_dir / "series"):
        letters = load_letters(service)
        if not 1 <= number <= len(letters):
            raise NotFound(f"service {service.name!r} has no letter {number}")
        _write_letter(service, number, Letter(number, subject, seconds, body or "", html or None,
                                              _public(public, clicks)))
        _letters_changed(service)


def _public(public: bool, clicks: bool = False) -> dict[str, str]:
    """The header lines a letter's boxes give it (``Public: yes``, ``Clicks: yes``)."""
    return {**({"public": "yes"} if public else {}), **({"clicks": "yes"} if clicks else {})}


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
        files.remove(stale.with_suffix(".html"))
        files.remove(stale)
    _letters_changed(service)


def _letters_changed(service: Service) -> None:
    """The series changed: the next-due summary, computed under the old
    letters, is forgotten (the writer keeps what depends on its file true)."""
    from vykhukhol.services import due_summary

    # A service's folder is <data>/services/<db>/<name> (DataDir.db).
    due_summary.forget_due(DataDir(service.folder.parents[2]), service.name)

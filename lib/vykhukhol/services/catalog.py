"""The DBs and the services in them: finding, reading, adding, editing, removing.

``data/services/<db>/db.free`` is the DB's rename lock; a service is the folder
``<db>/<service>/`` with ``service.ini`` and ``subscribers.txt``. Service names
are unique across DBs, because links name the service alone. The letters of a
service's series are :mod:`vykhukhol.services.series`; its subscribers,
:mod:`vykhukhol.services.subscribers`.
"""

from __future__ import annotations

import os

from vykhukhol import files
from vykhukhol.addresses import check_mailbox, clean_name
from vykhukhol.datadir import DataDir, check_name
from vykhukhol.errors import BadInput, Conflict, NotFound, StorageError
from vykhukhol.files.ini import read_sections

TYPE_CHECKING = False  # typing itself is not imported: every CGI page loads this module
if TYPE_CHECKING:
    from pathlib import Path

LOCK_STEM = "db"
SERVICE_FIELDS = ("title", "enabled", "from_name", "from_email", "delete_finished",
                  "send_window", "confirm_subject", "confirm_body", "public", "archive", "closed",
                  "form_language", "form_fields")


def yes_no(value: str, what: str) -> bool:
    """A yes/no field of ``service.ini`` or of a letter's header."""
    value = (value or "").strip().lower()
    if value in ("yes", "true", "1", "on"):
        return True
    if value in ("no", "false", "0", "off", ""):
        return False
    raise BadInput("{what}: must be yes or no", what=what)


class Record:
    """Compared and shown by its fields, like a dataclass; a plain class, because
    :mod:`dataclasses` imports :mod:`inspect`, a cost every CGI page would pay."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclasses were

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({shown})"


class Service(Record):
    """One service as its folder and ``service.ini`` describe it."""

    _fields = ("name", "db", "folder", "title", "enabled", "from_name", "from_email",
               "delete_finished", "send_window", "confirm_subject", "confirm_body", "public",
               "archive", "closed", "form_language", "form_fields")

    def __init__(self, name: str, db: str, folder: Path, title: str = "", enabled: bool = False,
                 from_name: str = "", from_email: str = "", delete_finished: bool = False,
                 send_window: str = "", confirm_subject: str = "", confirm_body: str = "",
                 public: bool = True, archive: bool = False, closed: bool = False,
                 form_language: bool = False, form_fields: tuple[str, ...] = ()) -> None:
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
        self.public = public  # listed on every subscriber's own page, with a join button
        # (docs/using/own-page.md#own-page)
        self.archive = archive  # its public letters are published (vykhukhol.archive)
        # Closed to newcomers: no sign-up, not offered on own pages; those on it
        # still get its letters (docs/using/services.md#service-switches).
        self.closed = closed
        # Its subscribe form asks the reader's language (docs/using/languages.md#reader-language).
        self.form_language = form_language
        # The site's fields its subscribe form asks for, in this order
        # (docs/using/fields.md#fields-forms).
        self.form_fields = form_fields

    @property
    def subscribers_path(self) -> Path:
        return self.folder / "subscribers.txt"

    @property
    def letters_dir(self) -> Path:
        return self.folder / "letters"

    @property
    def ini_path(self) -> Path:
        return self.folder / "service.ini"


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
    # An unreadable service.ini reads as a disabled service with defaults (what
    # configparser read of it before its error counts, as it always did).
    sections, _problem = read_sections(files.read_text(folder / "service.ini", "") or "")
    get = sections.get("service", {}).get
    service = Service(name=folder.name, db=db, folder=folder)
    service.title = get("title", "") or folder.name
    for flag, default in (("enabled", "no"), ("delete_finished", "no"), ("public", "yes"),
                          ("archive", "no"), ("closed", "no"), ("form_language", "no")):
        try:
            setattr(service, flag, yes_no(get(flag, default), flag))
        except BadInput:
            setattr(service, flag, False)  # a hand-edited value nobody can read: the safe side
    service.from_name = get("from_name", "")
    service.from_email = get("from_email", "")
    service.send_window = get("send_window", "")
    service.confirm_subject = get("confirm_subject", "").replace("\\n", "\n")
    service.confirm_body = get("confirm_body", "").replace("\\n", "\n")
    service.form_fields = field_names(get("form_fields", ""))
    return service


def field_names(text: str) -> tuple[str, ...]:
    """``form_fields = city, plan`` as the names it lists, in order."""
    return tuple(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))


def check_fields(values: dict[str, str]) -> dict[str, str]:
    """Validate service fields as given by a form or the CLI; return them normalised."""
    from vykhukhol import render
    from vykhukhol.services.schedule import validate as check_window

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
        elif key in ("enabled", "delete_finished", "public", "archive", "closed", "form_language"):
            value = "yes" if yes_no(value, key) else "no"
        elif key == "send_window":
            value = check_window(value) if value.strip() else ""
        elif key == "form_fields":
            from vykhukhol.settings.fields import check_field_name

            value = ", ".join(check_field_name(name) for name in field_names(value))
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
        "archive": "yes" if service.archive else "no", "closed": "yes" if service.closed else "no",
        "form_language": "yes" if service.form_language else "no",
        "form_fields": ", ".join(service.form_fields),
    })
    current.update(values)
    lines = ["[service]\n"]
    for key in SERVICE_FIELDS:
        text = current[key].replace("\r", "").replace("\n", "\\n")
        lines.append(f"{key} = {text}\n")
    files.atomic_write(service.ini_path, lines)


def _check_defined(data: DataDir, values: dict[str, str]) -> None:
    """A form asks only for fields the site defines (data/fields.ini)."""
    asked = field_names(values.get("form_fields", ""))
    if not asked:
        return
    from vykhukhol.settings import fields

    defined = {field.name for field in fields.load(data.root)}
    for name in asked:
        if name not in defined:
            raise BadInput("form_fields: no field named {name!r}; `vykhukhol field list` "
                           "names the site's fields", name=name)


def drop_form_field(data: DataDir, name: str) -> list[str]:
    """The services whose form asked for field ``name``, which no longer do
    (its definition is being removed)."""
    dropped = []
    for service in load_services(data):
        if name in service.form_fields:
            kept = ", ".join(other for other in service.form_fields if other != name)
            with files.record_lock(service.ini_path):
                _write_ini(_load(service.folder, service.db), {"form_fields": kept})
            dropped.append(service.name)
    return dropped


def add_service(data: DataDir, name: str, db: str, values: dict[str, str]) -> Service:
    check_name(name, "service name")
    if not data.db(db).is_dir():
        raise NotFound("no DB {db}", db=repr(db))
    values = check_fields({"title": name, **values})
    _check_defined(data, values)
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
    _check_defined(data, values)
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
    from vykhukhol.services.due_summary import forget_due

    forget_due(data, name)

"""DBs, services and the letters of a series: their files and their rules.

What the package offers, by module:

- :mod:`~vykhukhol.services.catalog`: the DBs and their services (``service.ini``);
- :mod:`~vykhukhol.services.series`: the letters of a service's series;
- :mod:`~vykhukhol.services.subscribers`: a service's ``subscribers.txt``, read and changed;
- :mod:`~vykhukhol.services.subscriber_line`: one line of it, the subscriber record;
- :mod:`~vykhukhol.services.confirmed`: its confirmed readers, read fast for a newsletter;
- :mod:`~vykhukhol.services.rules`: who is due which letter, and when;
- :mod:`~vykhukhol.services.schedule`: a service's send window;
- :mod:`~vykhukhol.services.due_summary`: the next-due summary of each service.

The names of the first two are offered here as well (``svc.find_service``).
"""

from __future__ import annotations

from vykhukhol.i18n import LANGUAGES  # the languages of a letter's versions
from vykhukhol.services.catalog import (
    LOCK_STEM,
    SERVICE_FIELDS,
    Service,
    add_db,
    add_service,
    check_fields,
    db_lock,
    drop_form_field,
    edit_service,
    find_service,
    list_dbs,
    load_services,
    remove_db,
    remove_service,
)
from vykhukhol.services.series import (
    MARKDOWN,
    MAX_LETTERS,
    Letter,
    add_letter,
    check_language,
    check_letter,
    check_parts,
    edit_letter,
    format_letter,
    given_html,
    letter_count,
    letter_delays,
    load_letters,
    move_letter,
    parse_letter,
    remove_letter,
    remove_version,
    sent_parts,
    set_version,
)

__all__ = [
    "LANGUAGES", "LOCK_STEM", "MARKDOWN", "MAX_LETTERS", "SERVICE_FIELDS", "Letter", "Service", "add_db",
    "add_letter", "add_service", "check_fields", "check_language", "check_letter", "check_parts", "db_lock",
    "drop_form_field", "edit_letter", "edit_service",
    "find_service", "format_letter", "given_html", "letter_count", "letter_delays",
    "list_dbs", "load_letters", "load_services", "move_letter", "parse_letter", "remove_db",
    "remove_letter", "remove_service", "remove_version", "sent_parts", "set_version",
]

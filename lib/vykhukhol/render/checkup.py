"""Whether a letter can be made, asked without sending it: the Status page's
warning for a letter broken by an FTP edit (docs/using/services.md#broken-letter), true until it is fixed
because it looks at the files as they are now, not at what a run logged.

It tries the templates as a save would (:func:`vykhukhol.render.check_template`:
they compile, and render for the sample subscriber inside the bounds); it
does not read services or letters itself (the caller hands them over).
"""

from __future__ import annotations

from pathlib import Path

from vykhukhol import render
from vykhukhol.errors import BadInput
from vykhukhol.render import footer


def letter_problem(subject: str, body: str, html: str | None) -> BadInput | None:
    """Why a letter with these templates cannot be made, or None."""
    budget = render.Budget()  # the parts share one budget, as when the letter is sent
    try:
        render.check_template(subject, "subject", budget=budget)
        render.check_template(body or "", "text", budget=budget)
        if html:
            render.check_template(html, "HTML", html=True, budget=budget)
    except BadInput as exc:
        return exc
    return None


def footer_problem(service_folder: Path | None, data_root: Path, lang: str) -> BadInput | None:
    """Why the footer the letters of a service (or, without one, of the site) get cannot be made."""
    text, html = footer.sources(service_folder, data_root, lang)
    try:
        render.check_template(text, "footer")
        render.check_template(html, "footer", html=True)
    except BadInput as exc:
        return exc
    return None

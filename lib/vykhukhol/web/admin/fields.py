"""The site's fields (docs/using/fields.md#fields-admin): the definitions,
which services' forms ask for each, adding one and removing one. Every POST
carries the session's CSRF token (:func:`.core.serve`); data/fields.ini is
written only by :mod:`vykhukhol.settings.fields`."""

from __future__ import annotations

from vykhukhol import services as svc
from vykhukhol.errors import BadInput, NotFound
from vykhukhol.i18n import LANGUAGES
from vykhukhol.settings import fields
from vykhukhol.web.admin.core import Admin
from vykhukhol.web.http import Response


def _(text: str) -> str:
    """A text for the catalog (tools/i18n.py finds it); the page translates it."""
    return text


#: Each kind as the page names it.
KINDS = {"text": _("text"), "number": _("number"), "date": _("date"),
         "choice": _("one of a list"), "yesno": _("yes or no")}


def fields_page(admin: Admin, args: dict, error: str = "", status: int = 200,
                form: dict | None = None) -> Response:
    try:
        found = fields.load(admin.data.root)
    except BadInput as exc:  # a hand edit broke the file: said, and nothing listed
        found, error = [], exc.text(admin.lang)
        status = 500 if status == 200 else status
    asking = svc.load_services(admin.data)
    rows = [{"name": f.name, "kind": KINDS[f.kind], "required": f.required,
             "label_ru": f.labels.get("ru", ""), "label_en": f.labels.get("en", ""),
             "choices": f.choices,
             "services": [s.name for s in asking if f.name in s.form_fields]} for f in found]
    return admin.page("fields.html", status, rows=rows, kinds=KINDS, error=error,
                      form=form or {})


def fields_add(admin: Admin, args: dict) -> Response:
    form = admin.request.form()
    labels = {lang: form.get(f"label_{lang}", "").strip() for lang in LANGUAGES}
    choices = tuple(c.strip() for c in form.get("choices", "").split("|") if c.strip())
    try:
        field = fields.add(admin.data.root, fields.Field(
            form.get("name", "").strip(), form.get("kind", ""), form.get("required") == "yes",
            {lang: text for lang, text in labels.items() if text}, choices))
    except BadInput as exc:
        return fields_page(admin, args, error=exc.text(admin.lang), status=400, form=form)
    return admin.done("/fields", admin._("Field {name} added.", name=field.name))


def fields_remove(admin: Admin, args: dict) -> Response:
    name = admin.request.form().get("name", "")
    if admin.request.form().get("confirm") != "yes":
        return admin.page("confirm.html", title=admin._("Remove field {name}?", name=name),
                          warning=admin._("Forms stop asking for it and letters see no value of "
                                          "it. The values readers gave stay on their lines until "
                                          "they are erased or the field is added again."),
                          action=admin.url("/fields/remove"), hidden={"name": name},
                          cancel=admin.url("/fields"))
    try:
        fields.remove(admin.data.root, name)
    except NotFound as exc:
        return fields_page(admin, args, error=exc.text(admin.lang), status=404)
    svc.drop_form_field(admin.data, name)  # the forms that asked for it stop asking
    return admin.done("/fields", admin._("Field {name} removed.", name=name))

"""The admin's "Import from another tool" previews the mapping of columns
to fields and names a refused row's line and column, in the site's language
(docs/using/import.md#import-fields); through a real ``vykhukhol serve``, as
the owner's browser posts the form."""

from __future__ import annotations

import html

from support import webkit
from support.webkit import Browser
from vykhukhol.settings import fields as site_fields
from vykhukhol.settings.fields import Field

served = webkit.served  # the fixture: a real `vykhukhol serve`


def post(browser: Browser, service: str, content: bytes, dry_run: bool, choices: str = ""
         ) -> webkit.Answer:
    form = [("tool", "csv"), ("map", choices)] + ([("dry_run", "yes")] if dry_run else [])
    return browser.import_from(service, form, "people.csv", "text/csv", content)


def test_the_preview_shows_the_mapping_and_the_refused_column_in_russian(site, served):
    site.set(language="ru")
    site.service("news")
    site_fields.add(site.data.root, Field("age", "number", labels={"ru": "Возраст", "en": "Age"}))
    browser = Browser(served.port)
    assert browser.log_in().status == 303
    content = "email,Возраст,notes\nanna@example.org,41,x\nboris@example.org,много,y\n".encode()
    answer = post(browser, "news", content, dry_run=True)
    page = html.unescape(answer.body)
    assert "Столбцы в поля: Возраст → age." in page, page
    assert "Столбцы, которые не используются: notes." in page
    assert "строка 3, столбец Возраст" in page and "Возраст: " in page
    assert site.subscribers("news") == {}
    post(browser, "news", content, dry_run=False)
    assert site.subscribers("news")["anna@example.org"].fields == {"age": "41"}
    assert "boris@example.org" not in site.subscribers("news")


def test_the_page_takes_the_columns_to_fields_as_the_command_line_does(site, served):
    site.service("news")
    site_fields.add(site.data.root, Field("city", "text"))
    browser = Browser(served.port)
    assert browser.log_in().status == 303
    assert 'name="map"' in browser.request("GET", "/admin/services/news/subscribers").body
    content = b"email,Town,Sprache\nanna@example.org,Omsk,ru\n"
    refused = post(browser, "news", content, dry_run=True, choices="Town=town")
    assert refused.status == 400 and "no field is named &#39;town&#39;" in refused.body, refused
    answer = post(browser, "news", content, dry_run=False, choices="Town=city\r\n\r\nSprache=language")
    assert "Columns to fields: Town → city; Sprache → the reader&#39;s language." in answer.body
    anna = site.subscribers("news")["anna@example.org"]
    assert anna.fields == {"city": "Omsk"} and anna.language == "ru"

"""The Russian catalog says everything the pages say, and what runs is what the .po says.

The catalog is lib/vykhukhol/locale/ru/LC_MESSAGES/vykhukhol.po (msgid: the
English text); tools/i18n.py finds the texts the code uses. Babel compiles
the .po here, in memory, to hold the shipped .mo to it.
"""

from __future__ import annotations

import configparser
import fnmatch
import gettext
import importlib.util
import io
import re
import struct
from pathlib import Path

import pytest

from vykhukhol import i18n

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("i18n_tool", ROOT / "tools" / "i18n.py")
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)


def _placeholders(text: str) -> set[str]:
    return set(re.findall(r"{(\w*)[^{}]*}", text))


def test_every_text_the_pages_show_has_its_russian_in_the_catalog():
    """_("…"), tr(lang, "…"), _n(…), errors' texts, settings' help and labels, MESSAGES."""
    texts, plurals = tool.used_messages()
    catalog = tool.read_catalog()
    missing = sorted(t for t in texts if t not in catalog)
    missing += sorted(s for s, _ in plurals if s not in catalog or not isinstance(catalog[s].id, tuple))
    assert not missing, f"not in {tool.PO.relative_to(ROOT)} (run tools/i18n.py extract): {missing}"


def test_the_extraction_finds_the_texts_of_each_kind_of_call():
    texts, _ = tool.used_messages()
    assert {"Delete", "Log out", "Status", "Subscribe: {service}", "SMTP port",
            "the template took longer than {seconds} s to render", "subject"} <= texts


def test_no_catalog_entry_is_untranslated_or_fuzzy():
    found = [p for p in tool.problems() if not p.startswith("missing")]
    assert not found, found


def test_translations_keep_their_placeholders():
    """A Russian text has exactly the {placeholders} of its English msgid."""
    for message in tool.read_catalog():
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        wanted = _placeholders(ids[-1])
        for string in strings:
            assert _placeholders(string) <= wanted | {"n"}, (message.id, string)
            assert _placeholders(string) >= wanted - {"n"}, (message.id, string)


def test_the_shipped_mo_says_what_the_po_says():
    """The .mo was compiled from the .po as it is now (compared by content, not bytes)."""
    fresh = gettext.GNUTranslations(io.BytesIO(tool.compiled(tool.read_catalog())))
    with tool.MO.open("rb") as f:
        shipped = gettext.GNUTranslations(f)
    assert shipped._catalog == fresh._catalog, "the .mo is stale: run `python3 tools/i18n.py compile`"
    assert shipped.plural(21) == fresh.plural(21) == 0


def test_no_translation_is_left_outside_the_catalog():
    """A merged branch that added to the old RU dict or a (ru, en) pair: run tools/i18n.py absorb."""
    assert not i18n.RU, "run `python3 tools/i18n.py absorb`"
    assert all(isinstance(text, str) for text in i18n.MESSAGES.values())


def test_the_package_ships_the_compiled_catalog():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    patterns = [p.strip() for p in config["options.package_data"]["vykhukhol"].split(",")]
    shipped = tool.MO.relative_to(ROOT / "lib" / "vykhukhol").as_posix()
    assert any(fnmatch.fnmatch(shipped, p) for p in patterns), patterns


def test_pages_read_the_catalog_at_run_time():
    assert i18n.tr("ru", "Delete") == "Удалить"
    assert i18n.tr("en", "Delete") == "Delete"
    assert i18n.t("ru", "subscribe.title", service="Новости") == "Подписка: Новости"
    assert i18n.t("en", "subscribe.title", service="News") == "Subscribe: News"


@pytest.mark.parametrize(("n", "ru", "en"), [
    (0, "0 подписчиков", "0 subscribers"), (1, "1 подписчик", "1 subscriber"),
    (2, "2 подписчика", "2 subscribers"), (5, "5 подписчиков", "5 subscribers"),
    (11, "11 подписчиков", "11 subscribers"), (12, "12 подписчиков", "12 subscribers"),
    (21, "21 подписчик", "21 subscribers"), (22, "22 подписчика", "22 subscribers"),
    (25, "25 подписчиков", "25 subscribers"), (101, "101 подписчик", "101 subscribers"),
    (111, "111 подписчиков", "111 subscribers"),
])
def test_a_count_takes_the_plural_form_of_its_language(n, ru, en):
    assert i18n.ntr("ru", "{n} subscriber", "{n} subscribers", n) == ru
    assert i18n.ntr("en", "{n} subscriber", "{n} subscribers", n) == en


def test_an_error_is_composed_once_and_read_in_either_language():
    """.message is the English the CLI prints; .text(lang) the same sentence
    through the catalog, a wrapped reason and a Term translated inside it."""
    from vykhukhol.errors import BadInput, Term

    inner = BadInput("must be from {low} to {high}", low=1, high=65535)
    outer = BadInput("{name}: {reason}", name="mail.smtp_port", reason=inner)
    assert outer.message == str(outer) == "mail.smtp_port: must be from 1 to 65535"
    assert outer.text("en") == outer.message
    assert outer.text("ru") == "mail.smtp_port: нужно число от 1 до 65535"
    field = BadInput("{field}: {value} is out of range {lo}-{hi}", field=Term("hour"), value="25", lo=0, hi=23)
    assert (field.message, field.text("ru")) == ("hour: 25 is out of range 0-23", "час: 25 вне диапазона 0-23")
    # a value may be called text or lang: the translation functions take those positionally
    named = BadInput("{what} {text} has an invalid domain", what="From", text="'a@b'")
    assert named.text("ru") == "From 'a@b': неверный домен"


def test_two_texts_with_the_same_english_keep_their_own_russian():
    """"Unsubscribe" is a page's title («Отписка от рассылки») and its button
    («Отписаться»): one msgid could hold only one, so the button has a msgctxt."""
    assert i18n.t("ru", "unsubscribe.title") == "Отписка от рассылки"
    assert i18n.t("ru", "unsubscribe.button") == "Отписаться"
    assert i18n.t("en", "unsubscribe.button") == "Unsubscribe"
    by_english: dict[str, list[str]] = {}
    for key, english in i18n.MESSAGES.items():
        if key not in i18n.CONTEXTS:
            by_english.setdefault(english, []).append(key)
    assert all(len(keys) == 1 for keys in by_english.values()), by_english


def test_the_catalogs_keys_are_in_their_bytes_order():
    """i18n.Catalog finds a text by a binary search over the .mo's keys, so
    the file must list them in their bytes' order, each once (tools/i18n.py
    lays Babel's file out so: Babel orders a context's entry by its text)."""
    data = (Path(i18n.LOCALE) / "ru" / "LC_MESSAGES" / f"{i18n.DOMAIN}.mo").read_bytes()
    count, originals = struct.unpack_from("<2I", data, 8)
    keys = []
    for index in range(count):
        length, offset = struct.unpack_from("<2I", data, originals + 8 * index)
        keys.append(data[offset:offset + length])
    assert any(b"\x04" in key for key in keys), "the catalog should have entries with a context"
    assert keys == sorted(set(keys))


def test_a_catalog_in_any_order_of_babels_is_laid_out_in_the_keys_order():
    """What Babel writes (a context's entry by its text) comes out of the tool
    sorted by key, every pair kept: gettext reads the same texts from both."""
    from babel.messages.catalog import Catalog as BabelCatalog
    from babel.messages.mofile import write_mo

    babel = BabelCatalog(locale="ru")
    babel.add("Unsubscribe", "Отписка")
    babel.add("Unsubscribe", "Отписаться", context="button")
    babel.add("Zebra", "Зебра")
    babel.add(("{n} day", "{n} days"), ("{n} день", "{n} дня", "{n} дней"))
    raw = io.BytesIO()
    write_mo(raw, babel)
    laid_out = tool.sorted_mo(raw.getvalue())
    ours, theirs = i18n.Catalog(laid_out), gettext.GNUTranslations(io.BytesIO(raw.getvalue()))
    assert gettext.GNUTranslations(io.BytesIO(laid_out))._catalog == theirs._catalog  # noqa: SLF001
    assert ours.pgettext("button", "Unsubscribe") == "Отписаться"
    assert ours.gettext("Unsubscribe") == "Отписка" and ours.gettext("Zebra") == "Зебра"
    assert [ours.ngettext("{n} day", "{n} days", n) for n in (1, 3, 5)] == \
        ["{n} день", "{n} дня", "{n} дней"]
    assert ours.gettext("{n} day") == "{n} day"  # a plural entry is no plain text, as in gettext


def test_a_catalog_cut_short_answers_in_english_never_blank():
    """A .mo truncated by a failed upload reads no text past its end: the page
    shows the English, never an empty string, and never fails."""
    data = (Path(i18n.LOCALE) / "ru" / "LC_MESSAGES" / f"{i18n.DOMAIN}.mo").read_bytes()
    whole = i18n.Catalog(data)
    texts = [key for key in i18n.MESSAGES.values() if whole.gettext(key) != key]
    assert texts
    for cut in (40, 1000, len(data) // 2, len(data) - 10):
        catalog = i18n.Catalog(data[:cut])
        for text in texts:
            assert catalog.gettext(text) in (text, whole.gettext(text))


def test_the_lazy_catalog_answers_every_entry_as_gettext_does():
    """i18n.Catalog reads the .mo lazily; each text, context and
    plural form of the real catalog must come out as stdlib gettext gives it."""
    data = (Path(i18n.LOCALE) / "ru" / "LC_MESSAGES" / f"{i18n.DOMAIN}.mo").read_bytes()
    ours, theirs = i18n.Catalog(data), gettext.GNUTranslations(io.BytesIO(data))
    assert len(theirs._catalog) > 100  # noqa: SLF001 - the reference's own table
    plurals = 0
    for key in theirs._catalog:  # noqa: SLF001
        if isinstance(key, tuple):
            singular = key[0]
            plurals += key[1] == 0
            for n in range(0, 130):
                assert ours.ngettext(singular, "many", n) == theirs.ngettext(singular, "many", n)
        elif "\x04" in key:
            context, message = key.split("\x04", 1)
            assert ours.pgettext(context, message) == theirs.pgettext(context, message)
        else:
            assert ours.gettext(key) == theirs.gettext(key)
    assert plurals > 0, "the catalog should have plural entries to compare"
    for missing in ("No such text", "{n} no such thing"):
        assert ours.gettext(missing) == theirs.gettext(missing) == missing
        assert ours.pgettext("button", missing) == missing
        assert [ours.ngettext(missing, "many", n) for n in (1, 2)] == [missing, "many"]
    with pytest.raises(OSError):
        i18n.Catalog(b"\0" * 28)

#!/usr/bin/env python3
"""The translation catalogs of Vykhukhol, kept as gettext files (a development tool).

The English sentence in the code is the msgid; the Russian is the msgstr in
``lib/vykhukhol/locale/ru/LC_MESSAGES/vykhukhol.po``; the compiled ``.mo``
beside it is what runs (stdlib ``gettext``). Babel reads and writes the files;
it is needed here and in the tests, never at run time.

    python3 tools/i18n.py extract   # add every text the code uses and the .po lacks (untranslated)
    python3 tools/i18n.py compile   # .po -> .mo (run after editing the .po)
    python3 tools/i18n.py absorb    # move leftover RU / (ru, en) entries of i18n.py into the .po, compile
    python3 tools/i18n.py absorb --from HEAD   # the same from another revision's i18n.py (a merge)
    python3 tools/i18n.py check     # list missing, untranslated and fuzzy entries; exit 1 if any

``absorb`` is for a branch that still added translations the old way (an
``RU`` dict entry, or a ``(ru, en)`` pair in ``MESSAGES``): it moves them into
the catalog and rewrites those two literals in i18n.py.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lib" / "vykhukhol"
I18N = PACKAGE / "i18n.py"
PO = PACKAGE / "locale" / "ru" / "LC_MESSAGES" / "vykhukhol.po"
MO = PO.with_suffix(".mo")
PLURAL_FORMS = ("nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && "
                "(n%100<10 || n%100>=20) ? 1 : 2);")

# One string literal, or several side by side (Python joins them); not an f-string.
_STRING = r"""((?:"(?:[^"\\\n]|\\.)*"\s*|'(?:[^'\\\n]|\\.)*'\s*)+)"""
_SINGLE = re.compile(r'(?:\b_\(|\btr\(\s*[\w.]+,|\b(?:BadInput|NotFound|Conflict|Forbidden|'
                     r'VykhukholError|MissingModule|Term|_TooCostly)\(|\bHttpError\(\s*\d+,)\s*' + _STRING
                     + r'''(?!\s*(?:[+%"']|f["']))''')
_PLURAL = re.compile(r'(?:\b_n\(|\bntr\(\s*[\w.]+,)\s*' + _STRING + r',\s*' + _STRING)
_MENU = re.compile(r'\(\s*"/[a-z/]*",\s*"([^"]+)"\)')


def _unescape(literals: str) -> str:
    return ast.literal_eval("(" + literals + ")")


def used_messages() -> tuple[set[str], set[tuple[str, str]]]:
    """Every English text the pages show: (singular texts, (singular, plural) pairs).

    Found in the source by the call that translates it, plus the texts that
    live in tables (settings' help and labels, the public pages' MESSAGES, the
    bounds of a letter template). The CLI keeps English, so the cli package is skipped.
    """
    sys.path.insert(0, str(ROOT / "lib"))
    from vykhukhol import i18n, render
    from vykhukhol.settings import KEYS
    from vykhukhol.watch import alerts, health

    texts: set[str] = set()
    plurals: set[tuple[str, str]] = set()
    sources = [p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] != "cli"]
    sources += list((PACKAGE / "templates").rglob("*.html"))
    for path in sources:
        source = path.read_text(encoding="utf-8")
        texts |= {_unescape(m) for m in _SINGLE.findall(source)}
        texts |= set(_MENU.findall(source))
        plurals |= {(_unescape(a), _unescape(b)) for a, b in _PLURAL.findall(source)}
    texts |= {spec.help for spec in KEYS.values()}
    texts |= set(i18n.SETTING_LABELS.values())
    texts |= {en if isinstance(en, str) else en[1] for en in i18n.MESSAGES.values()}
    texts |= set(render.PARTS)
    texts.add(health.NO_SECRET)  # shown through a name: _(NO_SECRET)
    texts |= {text for pair in alerts.BODIES.values() for text in pair}  # alerts.body()
    return {t for t in texts if t.strip()}, plurals


def read_catalog():
    from babel.messages.pofile import read_po

    with PO.open("rb") as f:
        return read_po(f, locale="ru", domain="vykhukhol")


def write_catalog(catalog) -> None:
    from babel.messages.pofile import write_po

    out = io.BytesIO()
    write_po(out, catalog, width=100, omit_header=False, sort_output=False)
    PO.parent.mkdir(parents=True, exist_ok=True)
    PO.write_bytes(out.getvalue())


def new_catalog():
    from babel.messages.pofile import read_po

    # Through read_po, so that the header says the plural rule exactly as gettext writes it.
    header = (f'msgid ""\nmsgstr ""\n"Project-Id-Version: vykhukhol\\n"\n"Language: ru\\n"\n'
              f'"MIME-Version: 1.0\\n"\n"Content-Type: text/plain; charset=utf-8\\n"\n'
              f'"Content-Transfer-Encoding: 8bit\\n"\n"Plural-Forms: {PLURAL_FORMS}\\n"\n')
    return read_po(io.BytesIO(header.encode()), locale="ru", domain="vykhukhol")


def put(catalog, msgid, string, context: str | None = None) -> None:
    """Set a translation, new or changed (Babel's ``add`` keeps an existing one's text)."""
    existing = catalog.get(msgid, context=context)
    if existing is None:
        catalog.add(msgid, string, context=context)
    else:
        existing.string = string
        existing.flags.discard("fuzzy")


def compiled(catalog) -> bytes:
    """The .mo of ``catalog``: what Babel writes, its entries laid out in the
    byte order of their keys (a context's entry by ``context\x04text``), as
    GNU msgfmt orders them. Babel orders a context's entry by its text alone;
    the reader at run time (vykhukhol.i18n.Catalog) finds an entry by a binary
    search over the keys, and a test holds the file to that order."""
    from babel.messages.mofile import write_mo

    out = io.BytesIO()
    write_mo(out, catalog, use_fuzzy=False)
    return sorted_mo(out.getvalue())


def sorted_mo(data: bytes) -> bytes:
    """A .mo's (key, translation) pairs written again in the byte order of the
    keys, without a hash table, in the byte order the file was written in."""
    import struct

    order = {b"\xde\x12\x04\x95": "<", b"\x95\x04\x12\xde": ">"}.get(data[:4])
    if order is None:
        raise SystemExit("not a gettext catalog: no .mo magic number")
    count, originals, translations = struct.unpack_from(f"{order}3I", data, 8)

    def text(table: int, index: int) -> bytes:
        length, offset = struct.unpack_from(f"{order}2I", data, table + 8 * index)
        return data[offset:offset + length]

    pairs = sorted((text(originals, i), text(translations, i)) for i in range(count))
    keys_at = 28
    values_at = keys_at + 8 * count
    strings_at = values_at + 8 * count
    tables, strings = [b"", b""], bytearray()
    for column in (0, 1):
        for pair in pairs:
            tables[column] += struct.pack(f"{order}2I", len(pair[column]), strings_at + len(strings))
            strings += pair[column] + b"\0"
    head = struct.pack(f"{order}7I", 0x950412DE, 0, count, keys_at, values_at, 0, strings_at)
    return head + tables[0] + tables[1] + bytes(strings)


def compile_mo() -> None:
    MO.write_bytes(compiled(read_catalog()))
    print(f"wrote {MO.relative_to(ROOT)}")


def extract() -> int:
    catalog = read_catalog()
    texts, plurals = used_messages()
    added = 0
    for text in sorted(texts):
        if text not in catalog:
            catalog.add(text, "")
            added += 1
    for singular, plural in sorted(plurals):
        if singular not in catalog:
            catalog.add((singular, plural), ("", "", ""))
            added += 1
    write_catalog(catalog)
    print(f"{added} new untranslated entries in {PO.relative_to(ROOT)}; translate them, then compile")
    used = texts | {singular for singular, _ in plurals}
    for message in catalog:
        msgid = message.id[0] if isinstance(message.id, tuple) else message.id
        if msgid and not message.context and msgid not in used:
            print(f"not found in the code (delete it from the .po if it is really unused): {msgid!r}")
    return 0


def problems() -> list[str]:
    """What the catalog lacks: texts the code uses with no Russian, fuzzy entries."""
    catalog = read_catalog()
    texts, plurals = used_messages()
    found = []
    for text in sorted(texts):
        if text not in catalog:
            found.append(f"missing: {text!r}")
    for singular, _plural in sorted(plurals):
        entry = catalog.get(singular)
        if entry is None or not isinstance(entry.id, tuple):
            found.append(f"missing plural: {singular!r}")
    from vykhukhol import i18n, states

    in_context = [(states.CONTEXT, english) for english in states._LABELS.values()]
    in_context += [(context, i18n.MESSAGES[key]) for key, context in i18n.CONTEXTS.items()]
    for context, english in in_context:
        if catalog.get(english, context=context) is None:
            found.append(f"missing (context {context}): {english!r}")
    for message in catalog:
        if not message.id:
            continue
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        if not all(s.strip() for s in strings):
            found.append(f"untranslated: {message.id!r}")
        if message.fuzzy:
            found.append(f"fuzzy: {message.id!r}")
    return found


def absorb(source_rev: str | None = None) -> int:
    """Move translations written the old way into the .po: the ``RU`` dict's
    entries and ``MESSAGES``' (ru, en) pairs of i18n.py — of the working file,
    emptied and rewritten, or (``--from REV``) of that revision's i18n.py, read
    only (a merge: the key of a ``MESSAGES`` pair new to this file is added).

    The catalog is the source of truth: an msgid it has keeps its Russian (a
    differing one is listed), and an entry the code no longer uses is left out."""
    import subprocess

    texts, plurals = used_messages()
    used = texts | {singular for singular, _ in plurals}
    catalog = read_catalog() if PO.exists() else new_catalog()
    if source_rev:
        old = subprocess.run(["git", "show", f"{source_rev}:{I18N.relative_to(ROOT).as_posix()}"],
                             cwd=ROOT, check=True, capture_output=True).stdout
    else:
        old = I18N.read_bytes()
    current = I18N.read_bytes()
    known_keys = _messages_keys(current)
    pairs, new_keys, edits = _old_style(old)
    moved = 0
    for english, russian in pairs:
        existing = catalog.get(english)
        if existing is not None:
            if existing.string != russian:
                print(f"kept the catalog's {existing.string!r}, not {russian!r}, for {english!r}")
            continue
        if english not in used and english not in new_keys.values():
            print(f"left out (the code does not use it): {english!r}")
            continue
        put(catalog, english, russian)
        moved += 1
    if source_rev:
        added = {k: v for k, v in new_keys.items() if k not in known_keys}
        if added:
            current = _add_messages(current, added)
    else:
        for start, end, text in sorted(edits, reverse=True):
            current = current[:start] + text + current[end:]
    I18N.write_bytes(current)
    write_catalog(catalog)
    compile_mo()
    print(f"moved {moved} translations into {PO.relative_to(ROOT)}; now run `python3 tools/i18n.py check`")
    return 0


def _old_style(source: bytes) -> tuple[list[tuple[str, str]], dict[str, str], list]:
    """(english, russian) pairs of an i18n.py's RU dict and MESSAGES tuples; the
    MESSAGES keys with their English; the edits that empty RU and make each
    tuple its English."""
    tree = ast.parse(source)
    starts = [0]  # ast's column offsets count bytes of UTF-8
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def span(node: ast.AST) -> tuple[int, int]:
        return (starts[node.lineno - 1] + node.col_offset,
                starts[node.end_lineno - 1] + node.end_col_offset)

    pairs, keys, edits = [], {}, []
    for node in tree.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and isinstance(node.value, ast.Dict)):
            continue
        if node.target.id == "RU" and node.value.keys:
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                pairs.append((ast.literal_eval(key), ast.literal_eval(value)))
            edits.append((*span(node.value), b"{}"))
        elif node.target.id == "MESSAGES":
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                if isinstance(value, ast.Tuple):
                    russian, english = ast.literal_eval(value)
                    pairs.append((english, russian))
                    edits.append((*span(value), _literal(english).encode()))
                    keys[ast.literal_eval(key)] = english
    return pairs, keys, edits


def _messages_keys(source: bytes) -> set[str]:
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "MESSAGES":
            return {ast.literal_eval(k) for k in node.value.keys}
    return set()


def _add_messages(source: bytes, added: dict[str, str]) -> bytes:
    """``source`` with ``added`` keys appended to its MESSAGES dict."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "MESSAGES":
            lines = source.splitlines(keepends=True)
            closing = node.end_lineno - 1  # the line of the dict's closing brace
            text = "".join(f"    {_quote(k)}: {_literal(v)},\n" for k, v in added.items())
            lines.insert(closing, text.encode())
            return b"".join(lines)
    raise SystemExit("i18n.py has no MESSAGES dict")


def _literal(text: str) -> str:
    """A string literal for ``text``, split over lines when it is long."""
    if len(text) <= 70:
        return _quote(text)
    words = re.findall(r"\S+\s*", text)
    chunks, line = [], ""
    for word in words:
        if len(line) + len(word) > 70 and line:
            chunks.append(line)
            line = ""
        line += word
    chunks.append(line)
    return "(\n        " + "\n        ".join(_quote(c) for c in chunks) + "\n    )"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["extract", "compile", "absorb", "check"])
    parser.add_argument("--from", dest="source_rev", metavar="REV",
                        help="absorb: read the old-style i18n.py of this git revision (a merge)")
    args = parser.parse_args()
    command = args.command
    if command == "extract":
        return extract()
    if command == "compile":
        compile_mo()
        return 0
    if command == "absorb":
        return absorb(args.source_rev)
    found = problems()
    print("\n".join(found) or "the catalog is complete")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

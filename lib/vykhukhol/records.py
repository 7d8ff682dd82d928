"""``NamedTuple`` for the records a subscribe post reads, without :mod:`typing`.

A record class written as ``class Rules(NamedTuple): delays: tuple[int, ...]``
is what :class:`typing.NamedTuple` makes of it: :func:`collections.namedtuple`
with the annotated fields (a field with a value is a default), and the class
body's methods and properties on it. But importing typing (with contextlib)
costs a CGI process about 3 ms, and the work after a subscribe post's answer
would import it only for these classes (docs/design/startup.md#startup-quickletter).
So this module makes the same class with collections alone; type checkers see
typing's own, and tests/unit/test_records.py holds the two to the same
fields, defaults, methods and behaviour.

Only the class form is offered: ``NamedTuple("Name", [...])``, generic
records and subclasses of a record are typing's business, not ours.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself is what this module spares its importers
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from collections import namedtuple

    # What typing.NamedTuple refuses to let a class body replace, and keeps for itself.
    _PROHIBITED = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields",
                             "_field_defaults", "_make", "_replace", "_asdict", "_source"})
    _SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})

    class _RecordMeta(type):
        def __new__(cls, typename: str, bases: tuple, namespace: dict):
            if bases != (_Record,):
                raise TypeError("a record inherits from NamedTuple alone")
            fields = namespace.get("__annotations__", {})
            with_default: list[str] = []
            for name in fields:
                if name in namespace:
                    with_default.append(name)
                elif with_default:
                    raise TypeError(f"Non-default namedtuple field {name} cannot follow "
                                    f"default field{'s' * (len(with_default) > 1)} "
                                    f"{', '.join(with_default)}")
            record = namedtuple(typename, list(fields), module=namespace["__module__"],
                                defaults=[namespace[name] for name in with_default])
            record.__annotations__ = record.__new__.__annotations__ = dict(fields)
            for key, value in namespace.items():
                if key in _PROHIBITED:
                    raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
                if key not in _SPECIAL and key not in record._fields:
                    setattr(record, key, value)
            return record

    _Record = type.__new__(_RecordMeta, "NamedTuple", (), {})

    def NamedTuple(*args: object, **kwargs: object) -> None:  # noqa: N802 - typing's name
        """Only as a base class: ``class Name(NamedTuple): ...``."""
        raise TypeError("vykhukhol.records.NamedTuple is for the class form only")

    NamedTuple.__mro_entries__ = lambda bases: (_Record,)

__all__ = ["NamedTuple"]

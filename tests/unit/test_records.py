"""vykhukhol.records.NamedTuple: the records of a subscribe post, made without
importing typing, are what typing.NamedTuple makes of the same class."""

from __future__ import annotations

import pickle
import typing

import pytest

from vykhukhol import records


def _pair(base):
    class Rules(base):
        """Some rules."""

        delays: tuple[int, ...]
        period: int
        limit: int = 3
        note: str = "-"

        def doubled(self) -> int:
            return self.period * 2

        @property
        def first(self) -> int:
            return self.delays[0]

    return Rules


OURS, THEIRS = _pair(records.NamedTuple), _pair(typing.NamedTuple)


def test_the_same_fields_defaults_and_methods() -> None:
    assert OURS._fields == THEIRS._fields == ("delays", "period", "limit", "note")
    assert OURS._field_defaults == THEIRS._field_defaults == {"limit": 3, "note": "-"}
    assert OURS.__doc__ == THEIRS.__doc__ == "Some rules."
    assert OURS.__module__ == THEIRS.__module__ == __name__
    assert OURS.__bases__ == THEIRS.__bases__ == (tuple,)
    assert list(OURS.__annotations__) == list(THEIRS.__annotations__)
    ours, theirs = OURS((1, 2), 5), THEIRS((1, 2), 5)
    assert repr(ours) == repr(theirs) == "Rules(delays=(1, 2), period=5, limit=3, note='-')"
    assert ours == theirs == ((1, 2), 5, 3, "-")
    assert (ours.doubled(), ours.first) == (theirs.doubled(), theirs.first) == (10, 1)
    assert ours._replace(limit=4) == theirs._replace(limit=4)
    assert ours._asdict() == theirs._asdict()
    assert OURS._make([(1,), 2, 3, "x"]) == THEIRS._make([(1,), 2, 3, "x"])
    assert OURS(delays=(9,), period=1, note="n") == THEIRS(delays=(9,), period=1, note="n")
    assert hash(ours) == hash(theirs)
    with pytest.raises(AttributeError):
        ours.period = 6  # type: ignore[misc]


def test_a_record_pickles() -> None:
    from vykhukhol.services.rules import Rules

    rules = Rules((0, 86400), 7, 2, False)
    assert pickle.loads(pickle.dumps(rules)) == rules


@pytest.mark.parametrize("base", [records.NamedTuple, typing.NamedTuple])
def test_the_same_refusals(base) -> None:
    with pytest.raises(TypeError):
        class Broken(base):  # a field without a default after one with a default
            first: int = 1
            second: int

    with pytest.raises(AttributeError):
        class Replacing(base):
            first: int

            def _replace(self, **values):  # noqa: ANN202
                return self


def test_only_the_class_form_is_offered() -> None:
    with pytest.raises(TypeError):
        records.NamedTuple("Point", [("x", int)])  # type: ignore[call-arg]

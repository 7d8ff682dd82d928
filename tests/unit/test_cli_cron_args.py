"""``vykhukhol [--data DIR] cron`` is read without building the parser
(cli.cron_words.cron_args, docs/design/startup.md#startup): whatever it reads, the parser reads the same."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vykhukhol import cli
from vykhukhol.cli.cron_words import cron_args

WORDS = st.lists(st.sampled_from(["cron", "--data", "--data=/srv/d", "--data=", "/srv/d", "-x",
                                  "--dat", "--", "status", "", "-h", "cron2", "--data=-q"]),
                 max_size=4)


@given(WORDS)
def test_what_the_fast_path_reads_the_parser_reads_the_same(words: list[str]) -> None:
    fast = cron_args(words)
    if fast is None:
        return
    assert vars(fast) == vars(cli.build_parser().parse_args(words))


@pytest.mark.parametrize("words", [["cron"], ["--data", "/srv/d", "cron"], ["--data=/srv/d", "cron"],
                                   ["--data=", "cron"], ["--data", "cron", "cron"]])
def test_the_forms_a_host_writes_take_the_fast_path(words: list[str]) -> None:
    assert cron_args(words) is not None
    assert vars(cron_args(words)) == vars(cli.build_parser().parse_args(words))


@pytest.mark.parametrize("words", [["cron", "-h"], ["--dat", "/srv/d", "cron"], ["cron", "extra"],
                                   ["--data", "-x", "cron"], ["status"], []])
def test_any_other_spelling_goes_to_the_parser(words: list[str]) -> None:
    assert cron_args(words) is None

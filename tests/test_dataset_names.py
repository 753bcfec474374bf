"""Dataset names: made and read back in one place (rnnrepro.data.names)."""

from __future__ import annotations

import re

import pytest

from rnnrepro import config as cfg
from rnnrepro.data import names


@pytest.mark.parametrize("family", cfg.FAMILIES)
def test_every_name_a_family_expands_to_reads_back_as_that_family(family):
    made = names.expand(family, m=(4, 8), cutoffs=(25,), folds=(1, 3))
    assert made
    for name in made:
        dataset = names.parse(name)
        assert dataset.family == family
        assert re.fullmatch(names.pattern(family), name)  # the wildcard constraint


def test_what_a_name_says():
    assert names.parse("dyck_m8") == names.Dataset("dyck_m8", "dyck", m=8)
    assert names.parse("dyck_m8").title == "8-bounded Dyck-2"
    cut = names.parse("ptb_char_cut25")
    assert (cut.family, cut.cutoff, cut.level) == ("ptb_char_cut", 25, "char")
    fold = names.parse("ptb_lines_bigram_fold3")
    assert (fold.family, fold.fold, fold.unfolded) == ("ptb_lines_bigram", 3, "ptb_lines_bigram")
    assert names.parse("ptb_word").level == "word" and names.parse("wikitext2").level is None
    assert names.parse("wikitext2").title == "WikiText-2"
    assert names.parse("ptb_char").unfolded == "ptb_char"


@pytest.mark.parametrize("name", ["ptb_chars", "dyck_m", "ptb_lines_unigram", "wikitext3", ""])
def test_a_name_no_family_makes_is_refused_by_name(name):
    with pytest.raises(ValueError, match=f"unknown dataset name {name!r}"):
        names.parse(name)
    with pytest.raises(ValueError):
        names.dyck_m("ptb_char")

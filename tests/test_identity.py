"""The run identity: its keys are defined once (``rnnrepro.evaluation.IDENTITY``), and the run
(``config.Run.identity``), its model file and its results all use them, in that order."""

from __future__ import annotations

import pytest

from rnnrepro.config import Run
from rnnrepro.evaluation import IDENTITY, OPTIONAL_IDENTITY, run_identity


def test_a_run_identity_has_the_keys_in_order():
    assert IDENTITY == ("experiment", "dataset", "model", "seed", "stage")
    assert OPTIONAL_IDENTITY == ("trial",)
    run = Run("dyck_exp", "dyck", "lstm", 3)
    assert run.identity() == {
        "experiment": "dyck_exp", "dataset": "dyck", "model": "lstm", "seed": 3, "stage": "train",
    }  # fmt: skip
    assert list(run.identity()) == list(IDENTITY)
    searched = Run("e", "ptb_word", "lstm", 1, "finetune", trial=2)
    assert list(searched.identity()) == [*IDENTITY, *OPTIONAL_IDENTITY]
    assert searched.identity()["stage"] == "finetune" and searched.identity()["trial"] == 2


def test_a_model_file_identity_reads_back():
    for run in (Run("e", "d", "m", 1), Run("e", "d", "m", 1, trial=4)):
        record = {"identity": {"extra": 0, **run.identity()}}
        with pytest.raises(ValueError, match="no run identity"):
            run_identity("model.pt", record)  # an unknown key
        record = {"identity": dict(reversed(run.identity().items()))}
        assert list(run_identity("model.pt", record).items()) == list(run.identity().items())
    with pytest.raises(ValueError, match="model.pt: the model file records no run identity"):
        run_identity("model.pt", {"identity": {"experiment": "e"}})

"""The translation task (major_minor §V-D4): sentence pairs of a prepared dataset
(``scripts/prepare_translation.py``) for ``models.seq2seq.LuongNMT``. Importing this module adds
it to ``rnnrepro.tasks.TASKS`` (``scripts/train_translation.py`` trains with it), so that the
language models' task module and its code digest stay as they are.

The schedule is TF-NMT's, which Table XI's numbers follow: ``translation.max_steps`` optimiser
steps in all, cut into ``max_epochs`` epochs of equal length with a validation after each (the
model kept is the one of the best validation loss); the learning rate halves ``halvings``
times, evenly spaced, from ``halve_from`` × max_steps on ("luong10"; the halving is the batch's
LR scale, ``procedures.BatchLoss``). The data are read in passes: each pass shuffles the pairs
(seeded by the run's seed and the pass), sorts windows of ``SORT_WINDOW`` batches by length and
shuffles the batches, so a step's batch is a function of the step alone and a resumed run
continues exactly. The objective is TF-NMT's: the summed target NLL divided by the batch's
sentences [A] (so history.csv's train_loss is nats per sentence; val_loss and val_ppl are per
target token, eos included).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from pathlib import Path

import torch

from rnnrepro.data.parallel import SPECIAL_IDS, read_pairs
from rnnrepro.evaluation.translation import batch_nll, corpus_loss, pair_batch
from rnnrepro.procedures import BatchLoss
from rnnrepro.tasks import SORT_WINDOW, TASKS
from rnnrepro.training import Task, history_columns_for


def read_vocab(path: str | Path) -> list[str]:
    """The BPE pieces of ``vocab.txt`` in id order; ValueError when the special ids are not
    sentencepiece's as ``data.parallel.SPECIAL_IDS`` sets them. (Not ``data.text.read_vocab``:
    a piece may be whitespace to ``str.split``, e.g. U+0085.)"""
    with open(path, encoding="utf-8") as f:
        vocab = [line.rstrip("\n") for line in f]
    if vocab[:3] != ["<pad>", "<s>", "</s>"]:
        raise ValueError(f"{path}: the first pieces are {vocab[:3]}, not <pad>, <s>, </s>")
    return vocab


class TranslationTask(Task):
    """Sentence pairs, TF-NMT's step schedule and validation perplexity per target token."""

    history_columns = history_columns_for(("ppl",))

    def __init__(
        self, run: dict, seed: int, device: torch.device, train: str, val: str, vocab: str
    ):
        super().__init__(run, seed, device)
        self.vocab = read_vocab(vocab)
        index = {piece: i for i, piece in enumerate(self.vocab)}
        self.bos, self.eos = SPECIAL_IDS["bos_id"], SPECIAL_IDS["eos_id"]
        self.train, self.val = read_pairs(train, index), read_pairs(val, index)
        if not self.train:
            raise ValueError(f"{train}: no training pairs")
        self._lengths = (self.train.lengths("source"), self.train.lengths("target"))
        settings = run["translation"]
        self.max_steps = settings["max_steps"]
        self.steps_per_epoch = math.ceil(self.max_steps / run["training"]["max_epochs"])
        self.decay_start = round(settings["halve_from"] * self.max_steps)
        self.halvings = settings["halvings"]
        self.decay_every = max(1, (self.max_steps - self.decay_start) // max(self.halvings, 1))
        self.files = [Path(train), Path(val), Path(vocab)]
        self._pass: int | None = None
        self._batches: list[list[int]] = self._pass_batches(0)

    def describe(self) -> str:
        return (
            f"{len(self.train)} training pairs, {len(self.val)} validation pairs; "
            f"{self.steps_per_epoch} steps an epoch, {self.max_steps} in all"
        )

    def _pass_batches(self, number: int) -> list[list[int]]:
        """The batches (pair indices) of pass ``number`` over the training pairs."""
        rng = random.Random(self.seed * 1000 + number)
        order = list(range(len(self.train)))
        rng.shuffle(order)
        size, window = self.batch_size, self.batch_size * SORT_WINDOW
        batches = []
        for start in range(0, len(order), window):
            chunk = sorted(
                order[start : start + window],
                key=lambda i: (self._lengths[0][i], self._lengths[1][i]),
            )
            batches += [chunk[k : k + size] for k in range(0, len(chunk), size)]
        rng.shuffle(batches)
        self._pass = number
        return batches

    def lr_scale(self, step: int) -> float:
        """The learning rate's factor at ``step`` (0-based): 1, then halved every
        ``decay_every`` steps from ``decay_start`` on, ``halvings`` times at most."""
        if not self.halvings or step < self.decay_start:
            return 1.0
        return 0.5 ** min(self.halvings, (step - self.decay_start) // self.decay_every)

    def batches(self, epoch: int) -> Iterator:
        for index in range(self.steps_per_epoch):
            step = epoch * self.steps_per_epoch + index
            if step >= self.max_steps:
                return
            number, k = divmod(step, len(self._batches))
            if number != self._pass:
                self._batches = self._pass_batches(number)
            pairs = [self.train[i] for i in self._batches[k]]
            yield step, pair_batch(pairs, self.bos, self.eos, self.device)

    def batch_loss(self, model, batch):
        step, pairs = batch
        return BatchLoss(batch_nll(model, pairs), pairs.src.size(1), None, self.lr_scale(step))

    def evaluate(self, model):
        result = corpus_loss(model, self.val, self.bos, self.eos, self.device)
        return {"loss": result["loss"], "ppl": result["ppl"]}


TASKS["translation"] = TranslationTask

"""What a training job learns from: one class per dataset kind (Dyck, sentences, streams), each
a ``training.Task`` giving the vocabulary, the data order, the carried state (streams: the
recurrent state across BPTT windows), the batch loss, the validation metrics, the history
columns and the files that define the run (for the resume digest). ``scripts/train.py`` and
``training.train`` are the same for every kind."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import torch

from .data import dyck, text
from .data.batching import (
    IGNORE_INDEX,
    Vocabulary,
    lm_batches,
    padded_batches,
    read_stream,
    stream_batches,
    variable_bptt_lengths,
)
from .evaluation.dyck import DyckEvalSet, evaluate_dyck
from .evaluation.text import evaluate_stream, evaluate_text, framing_ids
from .models.base import map_state
from .objectives import reinforce_loss, sequence_loss
from .procedures import BatchLoss
from .training import Task, history_columns_for

# Text batches are drawn from windows of 50 batches sorted by length [A]: the papers do not say
# how sentences were batched; random batches padded to their longest spend ~2-3x the compute.
SORT_WINDOW = 50


# The validation metrics of history.csv (its val_<metric> columns), the same for every kind: a
# metric a kind does not report is an empty column (a Dyck run's val_bpc, a stream's val_wcpa).
HISTORY_METRICS = ("ppl", "wcpa", "robust_wcpa", "bpc")


class DyckTask(Task):
    """Dyck-(k, m) sequences: <start> ... <end>, validation perplexity and WCPA."""

    history_columns = history_columns_for(HISTORY_METRICS)

    def __init__(
        self,
        run: dict,
        seed: int,
        device: torch.device,
        train: str,
        val: str,
        lengths: Sequence[int] | None = None,
    ):
        super().__init__(run, seed, device)
        k, m = run["dyck"]["k"], run["dyck"]["m"]
        self.k, self.m = k, m
        self.vocab = dyck.vocabulary(k)
        self._ids = Vocabulary(self.vocab)
        train_seqs = dyck.read_sequences(train, k=k, m=m, lengths=lengths)
        self.train = [self._ids.encode(s) for s in train_seqs]
        val_seqs = dyck.read_sequences(val, k=k, m=m, lengths=lengths)
        self.val = DyckEvalSet(val_seqs, self.vocab, run["reading"])
        self.min_events = run["dyck"].get("wcpa_min_events", 1)
        self.files = [Path(train), Path(val)]
        self.close_type = torch.tensor(dyck.close_type_ids(self.vocab), device=device)

    def describe(self) -> str:
        return f"Dyck-{self.k} m={self.m}; {len(self.train)} training sequences"

    def batches(self, epoch: int) -> Iterator:
        ids = self._ids
        for batch in padded_batches(
            self.train,
            self.batch_size,
            ids.bos_id,
            ids.eos_id,
            ids.pad_id,
            shuffle=True,
            seed=self.seed * 1000 + epoch,
        ):
            yield batch.inputs.to(self.device), batch.targets.to(self.device)

    def batch_loss(self, model, batch):
        inputs, targets = batch
        logits, _ = model(inputs)
        return sequence_loss(logits, targets, model.output, self._ids.pad_id, self.close_type)

    def evaluate(self, model):
        result = evaluate_dyck(
            model, self.val, self.vocab, device=self.device, min_events=self.min_events
        )
        return {
            "loss": result.loss,
            "ppl": result.ppl,
            "wcpa": result.wcpa,
            "robust_wcpa": result.robust_wcpa,
        }


class TextTask(Task):
    """Sentences or documents of a tokenised corpus (``prepare_text`` output), one per line."""

    history_columns = history_columns_for(HISTORY_METRICS)

    def __init__(
        self, run: dict, seed: int, device: torch.device, train: str, val: str, vocab: str
    ):
        super().__init__(run, seed, device)
        self.vocab = text.read_vocab(vocab)
        index = {token: i for i, token in enumerate(self.vocab)}
        self.framing = run["text"]["framing"]
        self.metric = run["text"]["metric"]
        self.eos_id = index.get("<eos>")
        self.train = text.encode(text.read_token_file(train), index, train)
        self.bos_eos = framing_ids(self.framing, self.eos_id)
        cutoff = run["text"].get("cutoff")
        if cutoff is not None:
            # multi_matrix §6.1 partial sentences [A]: a line cut at `cutoff` tokens has no sentence
            # end to predict; a line that was shorter keeps its <eos> target.
            self.train = [s if len(s) >= cutoff else [*s, self.eos_id] for s in self.train]
            self.bos_eos = {"bos_id": self.eos_id}
        self.val = text.encode(text.read_token_file(val), index, val)
        self.char_lengths = text.token_char_lengths(self.vocab)
        self.files = [Path(train), Path(val), Path(vocab)]

    def describe(self) -> str:
        tokens = sum(len(s) for s in self.train)
        return (
            f"{len(self.train)} training sequences, {tokens} tokens, vocabulary {len(self.vocab)}"
        )

    def batches(self, epoch: int) -> Iterator:
        for batch in lm_batches(
            self.train,
            self.batch_size,
            shuffle=True,
            seed=self.seed * 1000 + epoch,
            sort_window=SORT_WINDOW,
            **self.bos_eos,
        ):
            yield batch.inputs.to(self.device), batch.targets.to(self.device)

    def batch_loss(self, model, batch):
        inputs, targets = batch
        logits, _, aux = model.forward_aux(inputs)
        return BatchLoss(*sequence_loss(logits, targets, "vocab", IGNORE_INDEX), aux)

    def evaluate(self, model):
        result = evaluate_text(
            model, self.val, self.framing, self.char_lengths, self.eos_id, device=self.device
        )
        return {"loss": result.loss, "bpc": result.bpc if self.metric == "bpc" else None}


def drop_columns(state, dropped: torch.Tensor):
    """``state`` with the columns where ``dropped`` [B] is 1 set to zeros (the initial state,
    as at the stream's start): deepmind/lamb's ``drop_state_probability``. Each tensor's batch
    dimension is the one of size B; a tensor with none is kept, one with several is refused."""
    batch = len(dropped)
    keep = (1 - dropped).bool()

    def drop(tensor: torch.Tensor) -> torch.Tensor:
        dims = [d for d, size in enumerate(tensor.shape) if size == batch]
        if not dims:
            return tensor
        if len(dims) > 1:
            raise ValueError(
                f"drop_state_probability: a state tensor of shape {tuple(tensor.shape)} has "
                f"several dimensions of the batch size {batch}"
            )
        shape = [1] * tensor.dim()
        shape[dims[0]] = batch
        return tensor * keep.view(shape).to(tensor.dtype)

    return map_state(drop, state)


class StreamTask(Task):
    """A corpus read as one token stream (every line then ``<eos>``) in BPTT windows of
    ``training.bptt`` steps over ``batch_size`` columns; the recurrent state is carried from one
    window to the next (detached; each column's dropped with ``drop_state_probability``), reset
    at each epoch, and checkpointed mid-epoch."""

    history_columns = history_columns_for(HISTORY_METRICS)

    def __init__(
        self, run: dict, seed: int, device: torch.device, train: str, val: str, vocab: str
    ):
        super().__init__(run, seed, device)
        if not run["training"].get("bptt"):
            raise ValueError("a stream dataset needs training.bptt (steps per BPTT window)")
        self.bptt = run["training"]["bptt"]
        self.variable_bptt = run["training"].get("variable_bptt", False)
        self.eval_batch_size = run["training"].get("eval_batch_size", 10)
        self.vocab = text.read_vocab(vocab)
        index = {token: i for i, token in enumerate(self.vocab)}
        self.train, self.val = read_stream(train, index), read_stream(val, index)
        self.val = self.val[: run["training"].get("max_eval_tokens")]  # reduced scales
        self.files = [Path(train), Path(val), Path(vocab)]
        self.state = None
        self.baseline: float | None = None  # REINFORCE's moving average of the reward

    def describe(self) -> str:
        return (
            f"stream of {len(self.train)} tokens, vocabulary {len(self.vocab)}, "
            f"{self.batch_size} columns, BPTT {self.bptt}"
        )

    def start_epoch(self, epoch: int) -> None:
        self.state = None  # the REINFORCE baseline carries on

    def state_dict(self) -> dict:
        return {"state": self.state, "baseline": self.baseline}

    def load_state_dict(self, state: dict) -> None:
        self.state = map_state(lambda t: t.to(self.device), state.get("state"))
        self.baseline = state.get("baseline")

    def batches(self, epoch: int) -> Iterator:
        lengths = None
        if self.variable_bptt:
            lengths = variable_bptt_lengths(
                self.bptt, self.seed * 1000 + epoch, self.run["training"].get("max_seq_len_delta")
            )
        for inputs, targets in stream_batches(self.train, self.batch_size, self.bptt, lengths):
            yield inputs.to(self.device), targets.to(self.device)

    def batch_loss(self, model, batch):
        inputs, targets = batch
        drop = self.run["training"].get("drop_state_probability")
        if drop and self.state is not None:
            dropped = torch.empty(inputs.shape[1], device=inputs.device).bernoulli_(drop)
            self.state = drop_columns(self.state, dropped)
        logits, state, aux = model.forward_aux(inputs, self.state)
        self.state = map_state(torch.Tensor.detach, state)  # pytorch/examples' repackage_hidden
        nll, count = sequence_loss(logits, targets, "vocab", IGNORE_INDEX)
        if "action_log_prob" in aux:  # sampled memory actions (discrete stack): REINFORCE
            policy, self.baseline = reinforce_loss(
                aux["action_log_prob"], logits, targets, self.baseline
            )
            aux["losses"] = {**aux["losses"], "policy": policy}
        # a window of variable length scales the LR by its length (AWD-LSTM); 1 otherwise
        scale = len(inputs) / self.bptt if self.variable_bptt else 1.0
        return BatchLoss(nll, count, aux, scale)

    def evaluate(self, model):
        result = evaluate_stream(
            model, self.val, self.eval_batch_size, self.bptt, device=self.device
        )
        return {"loss": result.loss, "ppl": math.exp(result.loss)}


TASKS: dict[str, type[Task]] = {"dyck": DyckTask, "sentences": TextTask, "stream": StreamTask}


def make_task(
    run: dict,
    seed: int,
    device,
    train: str,
    val: str,
    vocab: str | None,
    dyck_lengths: Sequence[int] | None = None,
) -> Task:
    """The task of a run (``run``: the JSON of ``rnnrepro.config.run_config``; its ``task``
    names the kind). ``dyck_lengths``: a Dyck split's (min, max) length bounds."""
    kind = run.get("task")
    if kind not in TASKS:
        raise ValueError(f"run settings: 'task' is {kind!r}; known: {', '.join(TASKS)}")
    if kind == "dyck":
        return DyckTask(run, seed, device, train, val, dyck_lengths)
    if vocab is None:
        raise ValueError(f"a {kind} run needs its vocabulary file (--vocab)")
    return TASKS[kind](run, seed, device, train, val, vocab)

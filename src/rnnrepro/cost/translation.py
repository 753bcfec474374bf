"""Arithmetic of the translation runs (major_minor §V-D4, Tables XI-XII): FLOPs of
``models.seq2seq.LuongNMT`` counted from its hyper-parameters, for a cost no device has measured.
Torch-free: the cost estimate imports it before any job runs.

The count is of matrix products, 2 FLOPs per multiply-add, as ``torch.utils.flop_counter``
counts them (element-wise work, softmaxes and embedding look-ups are not counted):

- an LSTM of H units on inputs of width I: 4H(I + H) multiply-adds a position;
- encoder, layer i of size L_i and Major share p_i (``awd.MajorMinorLSTM``): a Major LSTM of
  round(p_i L_i) units on the layer below (the embedding e for i = 1) and a Minor LSTM of the
  rest on e; the sources are packed, so only their real tokens count;
- decoder, at every padded target position: both branches of layer 1 read [h̃; e] (top + e
  wide), Major i > 1 the layer below, every Minor [h̃; e]; then W_a (top²), the scores and the
  context (S · top each, S the padded source length), W_c (2 top²) and W_s (top · V);
- a training step is the forward pass and the backward pass, which computes two products of
  each forward one (the gradient of its input and of its weight) except one: the encoder's
  zero initial states have no gradient, so its first step's W_hh product has one. Hence
  3 × forward − Σ_encoder branches 2 · 4H² · B, FlopCounterMode's count to the FLOP on a CPU
  (tests/test_translation_cost.py; oneDNN's and cuDNN's fused LSTMs escape the counter).

A run is ``translation.max_steps`` such steps of ``batch_size`` pairs, a validation after each of
``max_epochs`` epochs, then the perplexity of the validation and test sets and beam search on
each test set (``evaluate_translation``, ``translate``). The pairs' lengths are stated in
``WMT14`` and ``STAND_IN``; seconds = FLOPs ÷ a sustained rate (``FlopRate``): measured where a
device has timed a translation epoch (``benchmarks/results[/gpu]/epoch_times.csv``), else
derived on the CPU from its measured language-model epochs, else ``ASSUMED_GPU`` [A].
"""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rnnrepro import config as cfg

# WMT'14 En-De's evaluation sets (sentences), major_minor Tables XI-XII: validation, then tests.
EVAL_SENTENCES = {"newstest2013": 3000, "newstest2015": 2169, "newstest2016": 2999}
VAL_BATCH = 64  # evaluation.translation.EVAL_BATCH_SIZE: validation and test perplexity


@dataclass(frozen=True)
class Lengths:
    """Mean pieces of a corpus's source and target sentences (eos excluded) and the padding of
    a training batch sorted by source length (``translation_task``: windows of 50 batches)."""

    source: float
    target: float
    target_padding: float  # decoder steps of a batch (longest target + 1) ÷ (mean target + 1)
    source_padding: float  # a batch's longest source (the attended length) ÷ the mean source
    basis: str


# Luong et al. (2015, §4.1): 4.5M pairs, 116M English and 110M German words, 25.8 and 24.4 words
# a sentence; a joint 32k BPE adds ~10 % pieces to English and ~25 % to German (compounds), ~29
# and ~30, and dropping the pairs with a side over 50 pieces takes off the long tail: 27 a side
# [A]. Padding [A]: batches of 128 sorted by (source, target) length in windows of 6,400 pairs,
# simulated with log-normal lengths (mean 27, at most 50) and a target/source log-ratio of sd
# 0.1-0.2, give decoder steps 1.25-1.43 × the mean (1.3 taken) and attended lengths 1.02 ×.
WMT14 = Lengths(27.0, 27.0, 1.3, 1.02, "[A] WMT'14 De-En: 27 BPE pieces a side, padding 1.3")
# The generated stand-in of the reduced scales (data.parallel.stand_in_pairs): 4-16 words, ~2
# pieces each; measured at the cpu scale (3,000 pairs, 200 pieces): 19.9 pieces a side, its
# sorted batches of 32 and 128 padded 1.02-1.04.
STAND_IN = Lengths(20.0, 20.0, 1.03, 1.03, "stand-in: 20 pieces a side (measured)")

# [A] No device has timed a translation step: an H100 (SXM) sustaining 30 % of its 67 TFLOP/s
# dense FP32 peak (4 % of its 495 TFLOP/s dense TF32) on batch-128 products of 1,000-2,000 wide
# matrices and the 33,201-wide softmax layer, the Python loop over target steps included. A
# measured translation epoch (epoch_times.csv) or ``estimate_cost --translation-tflops``
# replaces it.
H100_FP32_PEAK = 67e12
ASSUMED_GPU_SHARE = 0.3


@dataclass(frozen=True)
class FlopRate:
    """Sustained FLOP/s of translation arithmetic on a device, and how it was had."""

    flops_per_s: float
    basis: str


ASSUMED_GPU = FlopRate(
    ASSUMED_GPU_SHARE * H100_FP32_PEAK,
    f"assumed [A]: an H100 at {ASSUMED_GPU_SHARE:.0%} of its FP32 peak",
)


@dataclass(frozen=True)
class NMTShape:
    """What the arithmetic of a ``LuongNMT`` depends on (its constructor's arguments)."""

    vocab_size: int
    embedding_dim: int
    layer_sizes: tuple[int, ...]
    major_proportions: tuple[float, ...]

    @classmethod
    def from_hparams(cls, vocab_size: int, hparams: dict) -> NMTShape:
        sizes = tuple(hparams["layer_sizes"])
        proportions = tuple(hparams.get("major_proportions") or [1.0] * len(sizes))
        if len(proportions) != len(sizes):
            raise ValueError(f"major_proportions {proportions} needs one entry per layer {sizes}")
        return cls(vocab_size, hparams["embedding_dim"], sizes, proportions)

    @property
    def top(self) -> int:
        return self.layer_sizes[-1]

    def _branches(self, first_input: int, minor_input: int) -> list[tuple[int, int]]:
        """(input width, units) of each LSTM of one side, as ``MajorMinorLSTM`` splits a layer
        (round(p · L) Major units; a Minor only when units are left)."""
        out, below = [], first_input
        for size, p in zip(self.layer_sizes, self.major_proportions, strict=True):
            major = round(p * size)
            if not 0 < major <= size:
                raise ValueError(f"Major proportion {p} of {size} units leaves no Major LSTM")
            out.append((below, major))
            if major < size:
                out.append((minor_input, size - major))
            below = size
        return out

    def encoder_lstms(self) -> list[tuple[int, int]]:
        return self._branches(self.embedding_dim, self.embedding_dim)

    def decoder_lstms(self) -> list[tuple[int, int]]:
        feed = self.top + self.embedding_dim  # [h̃_{t-1}; e(y_t)]
        return self._branches(feed, feed)

    def parameters(self) -> int:
        """The parameter count (``LuongNMT.num_parameters``): two embeddings, every LSTM's
        weights and two biases, W_a, W_c, W_s and its bias."""
        lstms = self.encoder_lstms() + self.decoder_lstms()
        recurrent = sum(4 * h * (i + h) + 8 * h for i, h in lstms)
        V, top = self.vocab_size, self.top
        return 2 * V * self.embedding_dim + recurrent + 3 * top * top + top * V + V

    def encoder_macs(self) -> int:
        """Multiply-adds of one source token through the encoder."""
        return sum(4 * h * (i + h) for i, h in self.encoder_lstms())

    def decoder_macs(self, attended: float) -> float:
        """Multiply-adds of one target position: the decoder's LSTMs, attention over
        ``attended`` source states, W_c and the softmax layer."""
        lstm = sum(4 * h * (i + h) for i, h in self.decoder_lstms())
        top = self.top
        return lstm + top * top + 2 * attended * top + 2 * top * top + top * self.vocab_size

    def first_step_macs(self) -> int:
        """Multiply-adds of one sentence's first encoder step on the zero initial states."""
        return sum(4 * h * h for _, h in self.encoder_lstms())


def batch_flops(
    shape: NMTShape,
    source_tokens: float,
    sentences: float,
    target_steps: float,
    attended: float,
    train: bool = True,
) -> float:
    """FLOPs of one batch: ``source_tokens`` real source tokens, ``sentences`` pairs padded to
    ``target_steps`` decoder steps and ``attended`` source positions; forward only unless
    ``train`` (then forward + backward)."""
    forward = 2 * (
        source_tokens * shape.encoder_macs()
        + sentences * target_steps * shape.decoder_macs(attended)
    )
    if not train:
        return forward
    return 3 * forward - 2 * sentences * shape.first_step_macs()


def pair_batch_flops(
    shape: NMTShape,
    source_lengths: Sequence[int],
    target_lengths: Sequence[int],
    train: bool = True,
) -> float:
    """FLOPs of one batch of pairs of these lengths (eos excluded), as ``pair_batch`` pads it:
    max target + 1 decoder steps over max source attended positions."""
    return batch_flops(
        shape,
        sum(source_lengths),
        len(source_lengths),
        max(target_lengths) + 1,
        max(source_lengths),
        train,
    )


def expected_batch_flops(
    shape: NMTShape, batch: float, lengths: Lengths, train: bool = True
) -> float:
    """Expected FLOPs of a batch of ``batch`` pairs of ``lengths``."""
    steps = (lengths.target + 1) * lengths.target_padding
    attended = lengths.source * lengths.source_padding
    return batch_flops(shape, batch * lengths.source, batch, steps, attended, train)


def beam_flops(shape: NMTShape, source: float, steps: float, width: int) -> float:
    """FLOPs of beam search on one source of ``source`` pieces (``beam_search``): the encoder
    once, then ``steps`` decoder steps, the first of one hypothesis, each later one of
    ``width`` (none has ended: an upper bound)."""
    hypotheses = 1 + max(steps - 1, 0) * width
    return 2 * (source * shape.encoder_macs() + hypotheses * shape.decoder_macs(source))


@dataclass(frozen=True)
class TranslationFlops:
    """Counted FLOPs of one translation run, by part."""

    step: float  # one training step (forward + backward)
    steps: int
    validation: float  # one pass over the validation set, forward only
    epochs: int  # max_epochs: the steps are cut into as many epochs, a validation after each
    test_perplexity: float  # validation + test sets once more (evaluate_translation)
    beam: float  # beam search on every test set (translate)
    parameters: int
    lengths: Lengths

    @property
    def training(self) -> float:
        """The training job: every step and every validation."""
        return self.steps * self.step + self.epochs * self.validation

    @property
    def epoch(self) -> float:
        """One epoch of the training job (its steps and one validation)."""
        return self.training / self.epochs

    @property
    def evaluation(self) -> float:
        """The jobs after training: test perplexities and beam search."""
        return self.test_perplexity + self.beam

    @property
    def total(self) -> float:
        return self.training + self.evaluation


def _eval_flops(shape: NMTShape, sentences: int, lengths: Lengths) -> float:
    """Forward FLOPs of the perplexity of ``sentences`` pairs in batches of ``VAL_BATCH``."""
    return sentences / VAL_BATCH * expected_batch_flops(shape, VAL_BATCH, lengths, train=False)


def run_flops(config: dict, run: cfg.Run, settings: dict | None = None) -> TranslationFlops:
    """The counted FLOPs of a translation run at the config's scale (``settings``: its resolved
    ones, when the caller has them)."""
    settings = settings or cfg.run_config(config, run.experiment, run.dataset, run.model, run.stage)
    if "translation" not in settings:
        raise ValueError(f"{run.path} is no translation run")
    data, training = settings["translation"], settings["training"]
    shape = NMTShape.from_hparams(data["vocab_size"], settings["hparams"])
    scale = cfg.translation_settings(config)
    sets = cfg.TRANSLATION_FAMILIES[cfg.family(run.dataset)]
    stand_in = data.get("stand_in")
    lengths = STAND_IN if stand_in else WMT14
    if stand_in:
        val, test = stand_in["val"], {name: stand_in["test"] for name in sets["tests"]}
    else:
        val = EVAL_SENTENCES[sets["val"]]
        test = {name: EVAL_SENTENCES[name] for name in sets["tests"]}
    validation = _eval_flops(shape, val, lengths)
    width = scale["beam_width"]
    # decoder steps of a beam [A]: the reference's length + eos (the search stops once `width`
    # hypotheses have ended); at most max_decode_ratio × source + 10
    steps = min(lengths.target + 1, scale["max_decode_ratio"] * lengths.source + 10)
    beam = sum(test.values()) * beam_flops(shape, lengths.source, steps, width)
    return TranslationFlops(
        step=expected_batch_flops(shape, training["batch_size"], lengths),
        steps=data["max_steps"],
        validation=validation,
        epochs=training["max_epochs"],
        test_perplexity=validation + sum(_eval_flops(shape, n, lengths) for n in test.values()),
        beam=beam,
        parameters=shape.parameters(),
        lengths=lengths,
    )


def derived_rate(
    epoch_times: dict[tuple[str, str, str], float], flops_table: str | Path, experiment: str
) -> FlopRate | None:
    """A device's sustained FLOP/s on language models: the median over the runs of
    ``benchmarks/flops.py``'s table of ``experiment``'s models (counted FLOPs per epoch) that
    ``epoch_times`` (keys of ``cost.epoch_key``) has measured on that device; None without any."""
    path = Path(flops_table)
    if not path.is_file():
        return None
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    rates = []
    for r in rows:
        seconds = epoch_times.get((experiment, cfg.family(r["dataset"]), r["model"]))
        if seconds:
            rates.append(float(r["pflop_per_epoch"]) * 1e15 / seconds)
    if not rates:
        return None
    return FlopRate(
        statistics.median(rates),
        f"derived: median of {len(rates)} language models' counted FLOPs ÷ measured epochs",
    )


def format_flops(flops: float) -> str:
    """``flops`` with an SI prefix (e.g. 2.51 TFLOP)."""
    if flops <= 0 or not math.isfinite(flops):
        return f"{flops:g} FLOP"
    prefixes = ["", "k", "M", "G", "T", "P", "E", "Z"]
    k = min(int(math.log10(flops) // 3), len(prefixes) - 1)
    return f"{flops / 10 ** (3 * k):.3g} {prefixes[k]}FLOP"


def format_rate(rate: FlopRate) -> str:
    """E.g. "20.1 TFLOP/s (assumed [A]: ...)"."""
    return f"{format_flops(rate.flops_per_s)}/s ({rate.basis})"


def format_hours(hours: float) -> str:
    """Hours to two significant digits below 1, to 0.1 above."""
    return f"{hours:,.1f}" if hours >= 1 else f"{hours:.2g}"

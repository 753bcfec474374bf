"""Objectives and Dyck evaluation: closing positions, close probabilities, LDPA / WCPA."""

import math

import pytest
import torch

from rnnrepro.data.dyck import (
    floor_perplexity,
    generate,
    next_token_distribution,
    parse_bracket,
    vocabulary,
)
from rnnrepro.evaluation.dyck import (
    close_probabilities,
    closing_positions,
    evaluate_dyck,
    ldpa_rows,
    wcpa,
    wcpa_support,
)
from rnnrepro.models.base import RecurrentLM
from rnnrepro.objectives import sequence_loss

VOCAB = vocabulary(2)
CLOSE_TYPE = torch.tensor([-1, -1, -1, -1, 0, -1, 1])


class OracleLM(RecurrentLM):
    """Returns the generator's true next-token distribution (log-probs as logits)."""

    def __init__(self, vocab, k, m, min_len, output="vocab"):
        super().__init__()
        self.vocab, self.k, self.m, self.min_len, self.output = vocab, k, m, min_len, output

    def forward(self, tokens, state=None):
        steps, batch = tokens.shape
        width = len(self.vocab) if self.output == "vocab" else self.k
        logits = torch.zeros(steps, batch, width)
        for b in range(batch):
            stack = []
            for t in range(steps):
                token = self.vocab[int(tokens[t, b])]
                if token == "<pad>":
                    break
                if token != "<start>":
                    is_open, bracket_type = parse_bracket(token)
                    stack.append(bracket_type) if is_open else stack.pop()
                if self.output == "close":
                    if stack:
                        logits[t, b, stack[-1]] = 2.0  # p(gold) = 0.88 > 0.8
                    continue
                probs = next_token_distribution(stack, t, self.k, self.m, self.min_len)
                row = torch.full((width,), -1e9)
                for tok, p in probs.items():
                    row[self.vocab.index(tok)] = math.log(p)
                logits[t, b] = row
        return logits, None


class UniformLM(RecurrentLM):
    def __init__(self, vocab):
        super().__init__()
        self.vocab = vocab

    def forward(self, tokens, state=None):
        return torch.zeros(*tokens.shape, len(self.vocab)), None


def test_closing_positions_close_reading():
    seq = ["(a", "(b", "b)", "a)", "(b", "b)"]
    # logits at time i predict seq[i]; close of (b at seq 2 opened at 1, etc.
    assert closing_positions(seq) == [(2, 1, 1), (3, 3, 0), (5, 1, 1)]


def test_closing_positions_stack_reading():
    seq = ["(a", "(b", "b)", "a)", "(b", "b)"]
    # inputs: 0 <start>, 1 (a, 2 (b, 3 b), 4 a), 5 (b, 6 b)
    assert closing_positions(seq, "stack") == [(1, 0, 0), (2, 0, 1), (3, 2, 0), (5, 0, 1)]
    with pytest.raises(ValueError):
        closing_positions(["(a", "b)"], "stack")
    with pytest.raises(ValueError):
        closing_positions(seq, "top")


def test_close_probabilities_ratio():
    logits = torch.log(torch.tensor([[[0.1, 0.1, 0.1, 0.1, 0.3, 0.2, 0.1]]]))
    ratio = close_probabilities(logits, "vocab", [4, 6])
    assert ratio.shape == (1, 1, 2)
    assert ratio[0, 0].tolist() == pytest.approx([0.75, 0.25])
    close = close_probabilities(torch.tensor([[[0.0, math.log(4.0)]]]), "close")
    assert close[0, 0].tolist() == pytest.approx([0.2, 0.8])


def test_sequence_loss_vocab_by_hand():
    logits = torch.zeros(2, 1, 4, requires_grad=True)  # uniform over 4 tokens
    targets = torch.tensor([[3], [0]])  # second target is padding
    loss, n = sequence_loss(logits, targets, "vocab", pad_id=0)
    assert n == 1
    assert loss.item() == pytest.approx(math.log(4))
    loss.backward()
    assert logits.grad[1].abs().sum() == 0 and logits.grad[0].abs().sum() > 0


def test_sequence_loss_close_by_hand():
    logits = torch.tensor([[[math.log(3.0), 0.0]], [[0.0, 0.0]], [[5.0, 5.0]]], requires_grad=True)
    targets = torch.tensor([[4], [6], [3]])  # a), b), (a  -> types 0, 1, not scored
    loss, n = sequence_loss(logits, targets, "close", pad_id=0, close_type=CLOSE_TYPE)
    assert n == 2
    assert loss.item() == pytest.approx(-math.log(0.75) + math.log(2))
    assert loss.requires_grad
    with pytest.raises(ValueError):
        sequence_loss(logits, targets, "close", pad_id=0)


def test_ldpa_rows_and_wcpa():
    ldpa = {3: (1, 4), 1: (2, 2), 7: (0, 0)}
    assert ldpa_rows(ldpa) == [
        {"distance": 1, "correct": 2, "total": 2, "accuracy": 1.0},
        {"distance": 3, "correct": 1, "total": 4, "accuracy": 0.25},
    ]
    assert wcpa(ldpa) == 0.25
    assert math.isnan(wcpa({}))


@pytest.fixture(scope="module")
def dyck_sample():
    return generate(40, 2, 3, 4, 40, seed=2)


@pytest.mark.parametrize("reading", ["close", "stack"])
def test_oracle_reaches_floor_and_full_wcpa(dyck_sample, reading):
    result = evaluate_dyck(OracleLM(VOCAB, 2, 3, 4), dyck_sample, VOCAB, 16, reading)
    assert result.wcpa == 1.0
    assert result.n_targets == sum(len(s) + 1 for s in dyck_sample)
    assert result.ppl == pytest.approx(floor_perplexity(dyck_sample, 2, 3, 4), rel=1e-5)
    expected = sum(len(closing_positions(s, reading)) for s in dyck_sample)
    assert sum(n for _, n in result.ldpa.values()) == expected


def test_uniform_model_fails_every_prediction(dyck_sample):
    model = UniformLM(VOCAB)
    model.train()
    result = evaluate_dyck(model, dyck_sample, VOCAB, batch_size=7)
    assert result.wcpa == 0.0  # ratio 0.5 is not > 0.8
    assert all(c == 0 for c, _ in result.ldpa.values())
    assert result.ppl == pytest.approx(len(VOCAB), rel=1e-5)
    assert model.training  # mode restored


def test_close_output_model(dyck_sample):
    result = evaluate_dyck(OracleLM(VOCAB, 2, 3, 4, output="close"), dyck_sample, VOCAB)
    assert result.ppl is None
    assert result.wcpa == 1.0
    assert result.n_targets == sum(len(s) for s in dyck_sample) // 2
    assert result.loss == pytest.approx(math.log(1 + math.exp(-2.0)), rel=1e-5)


def test_robust_wcpa_ignores_distances_with_few_events():
    ldpa = {1: (9, 10), 2: (18, 20), 40: (0, 1), 41: (1, 3)}
    assert wcpa(ldpa) == 0.0  # one event at distance 40 decides the papers' WCPA
    assert wcpa(ldpa, min_events=3) == pytest.approx(1 / 3)
    assert wcpa(ldpa, min_events=10) == pytest.approx(0.9)
    assert math.isnan(wcpa(ldpa, min_events=50))
    support = wcpa_support(ldpa, min_events=10)
    assert support == {
        "wcpa_distance": 40,
        "wcpa_events": 1,
        "distances": 4,
        "rare_distances": 2,
        "wcpa_min_events": 10,
    }


class NoisyLM(RecurrentLM):
    """Random logits from the tokens (deterministic): a mix of right and wrong judgements."""

    def forward(self, tokens, state=None):
        gen = torch.Generator().manual_seed(int(tokens.sum()))
        return 3 * torch.randn(*tokens.shape, len(VOCAB), generator=gen), None


def test_the_tally_equals_counting_each_event(dyck_sample):
    """evaluate_dyck's batched per-distance counts against a loop over every event."""
    from rnnrepro.data.batching import Vocabulary

    model, voc = NoisyLM(), Vocabulary(VOCAB)
    result = evaluate_dyck(model, dyck_sample, VOCAB, batch_size=1, min_events=3)
    expected: dict[int, list[int]] = {}
    close_ids = [VOCAB.index("a)"), VOCAB.index("b)")]
    for seq in dyck_sample:
        tokens = torch.tensor([voc.bos_id, *voc.encode(seq)]).unsqueeze(1)
        probs = close_probabilities(model(tokens)[0], "vocab", close_ids)
        for position, distance, gold in closing_positions(seq):
            tally = expected.setdefault(distance, [0, 0])
            tally[0] += bool(probs[position, 0, gold] > 0.8)
            tally[1] += 1
    assert result.ldpa == {d: tuple(v) for d, v in sorted(expected.items())}
    assert 0 < sum(c for c, _ in result.ldpa.values()) < sum(n for _, n in result.ldpa.values())
    assert result.robust_wcpa == wcpa(result.ldpa, 3) and result.min_events == 3

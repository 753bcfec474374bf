"""Syntactic evaluation: scores, categories, the NPI comparisons and <unk> counts."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from torch import nn

from rnnrepro.evaluation.syneval import (
    CATEGORIES,
    case_of,
    read_pairs,
    score_pairs,
    sentence_logprobs,
)
from rnnrepro.models import build_model

VOCAB = ["<eos>", "<unk>", ".", "no", "the", "most", "authors", "ever", "is", "are", "good"]


class Unigram(nn.Module):
    """Context-free LM: log p(w) from fixed logits, whatever came before."""

    def __init__(self, logits):
        super().__init__()
        self.logits = torch.tensor(logits, dtype=torch.float)

    def forward(self, tokens, state=None):
        return self.logits.expand(*tokens.shape, -1), state


def test_nineteen_categories_and_cases():
    assert len(CATEGORIES) == 19
    assert case_of("npi_across_inanim") == "npi_across" and case_of("prep_anim") == "prep"


def test_logprobs_do_not_depend_on_batching():
    torch.manual_seed(0)
    model = build_model("lstm", VOCAB, embedding_dim=4, hidden_size=5).eval()
    sentences = [[3, 6, 7, 2], [4, 6, 2], [5, 6, 8, 10, 9, 2], [2]]
    alone = [sentence_logprobs(model, [s], 0)[0] for s in sentences]
    together = sentence_logprobs(model, sentences, 0, batch_size=3)
    assert together == pytest.approx(alone, rel=1e-5)
    # Σ log p of the words and the final "." after <eos>
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([[0], [3], [6], [7]]))[0], -1)[:, 0]
    assert alone[0] == pytest.approx(float(sum(logp[t, w] for t, w in enumerate([3, 6, 7, 2]))))


def test_npi_comparisons_and_unk(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text(
        "template\tcondition\tgrammatical\tungrammatical\tungrammatical_2\n"
        "simple_agrmt\tsing\tthe authors are good\tthe authors is good\t\n"
        "simple_agrmt\tsing\tthe authors are splendid\tthe authors is splendid\t\n"
        "npi_across_anim\tpast\tno authors ever\tthe authors ever\tmost authors ever\n"
    )
    pairs = read_pairs(path)
    # "are" likelier than "is"; "no" > "most" > "the": G>I and G>U hold, I>U does not
    logits = [0.0] * len(VOCAB)
    for word, value in (("are", 2.0), ("is", -2.0), ("no", 3.0), ("most", 1.0), ("the", 0.0)):
        logits[VOCAB.index(word)] = value
    table = score_pairs(Unigram(logits), pairs, VOCAB).set_index("category")
    assert table.loc["simple_agrmt", "accuracy"] == 1.0
    assert table.loc["simple_agrmt", "unk_pairs"] == 1  # "splendid"
    assert table.loc["npi_across G>I", "correct"] == 1
    assert table.loc["npi_across I>U", "correct"] == 0
    assert table.loc["npi_across G>U", "correct"] == 1
    assert "simple_npi G>I" not in table.index  # no such template in the file


def test_bad_pairs_file_names_the_problem(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("template\tgood\tbad\nsimple_agrmt\ta\tb\n")
    with pytest.raises(ValueError, match="expected columns"):
        read_pairs(path)
    pd.DataFrame(
        {"template": ["made_up"], "condition": ["x"], "grammatical": ["a"],
         "ungrammatical": ["b"], "ungrammatical_2": [""]}
    ).to_csv(path, sep="\t", index=False)  # fmt: skip
    with pytest.raises(ValueError, match="unknown template case"):
        read_pairs(path)

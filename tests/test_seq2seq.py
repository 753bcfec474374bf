"""major_minor's translation model (§V-D4, docs/methods.md §12.7): Luong's global "general"
attention with input feeding against a step-by-step definition, padding, Major-Minor branches,
the parameter counts of Table XII, and decoding (beam width 1 is greedy)."""

from __future__ import annotations

import pytest
import torch

from rnnrepro.evaluation.translation import beam_search, greedy_decode
from rnnrepro.models.seq2seq import LuongNMT

VOCAB = ["<pad>", "<s>", "</s>"] + [f"w{i}" for i in range(17)]


def tiny(**hparams) -> LuongNMT:
    torch.manual_seed(0)
    settings = dict(embedding_dim=6, layer_sizes=[8, 8], init_range=0.5)
    return LuongNMT(VOCAB, **{**settings, **hparams}).eval()


def lstm_step(lstm, x, h, c):
    """One step of a one-layer nn.LSTM, from its weights (i, f, g, o gates)."""
    gates = x @ lstm.weight_ih_l0.T + lstm.bias_ih_l0 + h @ lstm.weight_hh_l0.T + lstm.bias_hh_l0
    i, f, g, o = gates.chunk(4, dim=-1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def reference(model, src, tgt_in):
    """Luong et al.'s equations for one sentence of plain LSTM layers, one step at a time."""
    layers = [layer.major.lstm for layer in model.encoder]
    h = [torch.zeros(lstm.hidden_size) for lstm in layers]
    c = [torch.zeros(lstm.hidden_size) for lstm in layers]
    source_states = []
    for token in src:
        x = model.src_embedding.weight[token]
        for k, lstm in enumerate(layers):
            h[k], c[k] = lstm_step(lstm, x, h[k], c[k])
            x = h[k]
        source_states.append(x)
    hbar = torch.stack(source_states)  # [S, H]
    feed = torch.zeros(hbar.size(1))
    out = []
    for token in tgt_in:
        x = torch.cat([feed, model.tgt_embedding.weight[token]])
        for k, layer in enumerate(model.decoder):
            h[k], c[k] = lstm_step(layer.major.lstm, x, h[k], c[k])
            x = h[k]
        scores = hbar @ (model.attention.weight @ x)  # h_t^T W_a h̄_s
        context = torch.softmax(scores, 0) @ hbar
        feed = torch.tanh(model.combine.weight @ torch.cat([context, x]))
        out.append(torch.log_softmax(model.generator.weight @ feed + model.generator.bias, 0))
    return torch.stack(out)


def test_attention_and_input_feeding_follow_the_step_by_step_definition():
    model = tiny()
    src, tgt_in = torch.tensor([3, 7, 5, 9]), torch.tensor([1, 4, 6, 8, 10])
    ours = model(src[:, None], torch.tensor([4]), tgt_in[:, None])[:, 0]
    assert torch.allclose(ours, reference(model, src, tgt_in), atol=1e-5)


def test_padding_changes_no_sentence():
    model = tiny(major_proportions=[0.75, 0.5])
    long, short = torch.tensor([3, 4, 5, 6, 7]), torch.tensor([8, 9])
    tgt = torch.tensor([[1, 1], [4, 5], [6, 7]])
    src = torch.zeros(5, 2, dtype=torch.long)
    src[:, 0], src[:2, 1] = long, short
    batch = model(src, torch.tensor([5, 2]), tgt)
    alone = model(short[:, None], torch.tensor([2]), tgt[:, 1:])
    assert torch.allclose(batch[:, 1:], alone, atol=1e-6)


def test_major_minor_branches_pair_encoder_and_decoder_and_minors_read_their_inputs():
    model = tiny(layer_sizes=[10, 10], major_proportions=[0.7, 0.9])
    for enc, dec in zip(model.encoder, model.decoder, strict=True):
        assert enc.major.hidden_size == dec.major.hidden_size
        assert enc.minor.hidden_size == dec.minor.hidden_size
        assert enc.minor.lstm.input_size == 6  # the source embedding
        assert dec.minor.lstm.input_size == 10 + 6  # [h̃_{t-1}; e(y_t)]
    assert [layer.major.hidden_size for layer in model.encoder] == [7, 9]


# Table XII: 170.7M and 172.8M; a joint BPE vocabulary of 33,201 subwords gives the baseline's
# count [A] (each token costs 3,001 parameters: two embeddings, a generator row and its bias).
@pytest.mark.parametrize(
    "sizes, proportions, printed",
    [([1000] * 4, None, 170.7e6), ([1070] * 4, [0.7, 0.7, 0.8, 0.9], 172.8e6)],
)
def test_parameter_counts_match_table_xii(sizes, proportions, printed):
    with torch.device("meta"):
        model = LuongNMT(["x"] * 33201, 1000, sizes, proportions)
    assert model.num_parameters() == pytest.approx(printed, rel=0.005)
    assert abs(model.num_parameters() / printed - 1) < 0.0003


def test_beam_of_width_one_is_greedy_and_wider_beams_score_at_least_as_well():
    model = tiny(layer_sizes=[12, 12], major_proportions=[0.75, 0.75])
    src = torch.tensor([3, 8, 11, 4])
    greedy = greedy_decode(model, src, bos=1, eos=2, max_length=12)
    assert beam_search(model, src, bos=1, eos=2, max_length=12, width=1) == greedy
    assert len(greedy) <= 12

    def score(tokens):
        tgt = torch.tensor([1, *tokens])[:, None]
        log_probs = model(src[:, None], torch.tensor([4]), tgt)[:, 0]
        targets = [*tokens, 2]
        return sum(float(log_probs[t, y]) for t, y in enumerate(targets[: len(tgt)]))

    wide = beam_search(model, src, bos=1, eos=2, max_length=12, width=5)
    if len(wide) < 12 and len(greedy) < 12:  # both ended with </s>
        assert score(wide) >= score(greedy) - 1e-5
    with pytest.raises(ValueError, match="at least 1"):
        beam_search(model, src, 1, 2, 12, 0)

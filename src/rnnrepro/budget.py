"""Closed-form parameter counts and a parameter-budget solver (pure Python: no torch import,
the Snakefile uses it to build the DAG).

``parameter_count(architecture, vocab_size, hparams)`` is the number of trainable parameters of
``rnnrepro.models.build_model(architecture, vocab, **hparams)`` with ``len(vocab) == vocab_size``
(the tests check every formula against ``model.num_parameters()``). With V the vocabulary,
e the embedding size, h the hidden size, m the inner size, L layers, K choices, in_l the input
size of layer l (e for l = 1, h above), every multi_matrix model being Embedding(V, e) -> layers ->
Linear(h, V) with bias, i.e. V·e + Σ_l layer_l + (h·V + V):

    rnn     layer = h·in + h² + 2h                      (nn.RNN: two bias vectors)
    lstm    layer = 4h·in + 4h² + 8h                    (nn.LSTM: two bias vectors)
    mrnn    layer = h² + 2h·e + h                       (W_mh = I, docs/methods.md §5.3; one layer)
    mlstm   layer = 4h² + 5h·e + 4h                     (one layer)
    mmrnn   layer = K·h² + h·in + h + K(K + h + in)     (docs/methods.md §5.4)
    mmlstm  layer = 4 (K·h² + h·in + h + K(K + h + in)) (docs/methods.md §5.4)

general_second_order (one-hot inputs, no embedding; docs/methods.md §6.4):

    second_order_rnn  h·m + m·V + m·h + δ_D h·V + δ_E h² + h + V·h + V
    first_order_rnn   h² + (2V + 1)h + V
    mi_rnn            h² + (2V + 4)h + V

awd_lstm (major_minor; ``awd_parameter_count``): Embedding(V, e), layers of output size L_l
split into a Major LSTM of M_l = round(p_l·L_l) units reading in_l (e, then L_{l-1}) and a Minor
LSTM of L_l − M_l units reading e (or in_l with ``minor_input="previous"``), then a decoder tied
to the embedding (bias V) and, with K experts, the mixture's prior K·L and latent L·K·e + K·e.

``solve(architecture, vocab_size, budget, ratio=1.0, **fixed)`` returns the largest hidden size
whose count fits the budget (docs/methods.md §6.4: round h down, m = round(ratio·h), report the
count).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from math import floor

# hyper-parameters that do not change the parameter count
_NO_PARAMETERS = {"dropout", "dropouti", "activation", "b_init_std"}  # no effect on the count

# architecture -> (required hyper-parameters, optional ones with their defaults)
_HPARAMS: dict[str, tuple[tuple[str, ...], dict]] = {
    "rnn": (("embedding_dim", "hidden_size"), {"num_layers": 1}),
    "lstm": (("embedding_dim", "hidden_size"), {"num_layers": 1}),
    "mrnn": (("embedding_dim", "hidden_size"), {}),
    "mlstm": (("embedding_dim", "hidden_size"), {}),
    "mmrnn": (("embedding_dim", "hidden_size"), {"num_layers": 1, "choices": 4}),
    "mmlstm": (("embedding_dim", "hidden_size"), {"num_layers": 1, "choices": 4}),
    "second_order_rnn": (("hidden_size", "inner_size"), {"use_d": True, "use_e": True}),
    "first_order_rnn": (("hidden_size",), {}),
    "mi_rnn": (("hidden_size",), {}),
}

ARCHITECTURES = tuple(_HPARAMS)
# architectures with an inner (multiplicative) size m, solved as m = round(ratio · h)
INNER_SIZE = ("second_order_rnn",)


def _layers(num_layers: int, e: int, h: int, layer: Callable[[int], int]) -> int:
    """Σ over layers of layer(input size): the first layer reads e, the others h."""
    return sum(layer(e if index == 0 else h) for index in range(num_layers))


def _embedded(V: int, e: int, h: int, body: int) -> int:
    """Embedding(V, e) + recurrent body + Linear(h, V) with bias."""
    return V * e + body + h * V + V


def _lstm(n_in: int, h: int) -> int:
    """nn.LSTM(n_in, h): 4h·n_in + 4h² + 8h (two bias vectors)."""
    return 4 * h * (n_in + h) + 8 * h if h else 0


def awd_parameter_count(vocab_size: int, hparams: dict) -> int:
    """Trainable parameters of ``build_model("awd_lstm", vocab, **hparams)`` (see above)."""
    V, e, sizes = vocab_size, hparams["embedding_dim"], hparams["layer_sizes"]
    proportions = hparams.get("major_proportions") or [1.0] * len(sizes)
    previous = hparams.get("minor_input", "embedding") == "previous"
    count, n_in = V * e, e
    for size, proportion in zip(sizes, proportions, strict=True):
        major = round(proportion * size)
        count += _lstm(n_in, major) + _lstm(n_in if previous else e, size - major)
        n_in = size
    K = hparams.get("experts", 0)
    if K:
        count += K * n_in + n_in * K * e + K * e
    if not hparams.get("tie_weights", True):
        count += V * (e if K else n_in)
    return count + V


def parameter_count(architecture: str, vocab_size: int, hparams: dict) -> int:
    """Trainable parameters of ``build_model(architecture, vocab, **hparams)``, |vocab| = V."""
    if architecture == "awd_lstm":
        return awd_parameter_count(vocab_size, hparams)
    p = _check(architecture, hparams)
    V, h = vocab_size, p["hidden_size"]
    if architecture == "second_order_rnn":
        m = p["inner_size"]
        d_term = h * V if p["use_d"] else 0
        e_term = h * h if p["use_e"] else 0
        return h * m + m * V + m * h + d_term + e_term + h + V * h + V
    if architecture == "first_order_rnn":
        return h * h + (2 * V + 1) * h + V
    if architecture == "mi_rnn":
        return h * h + (2 * V + 4) * h + V
    e = p["embedding_dim"]
    if architecture == "rnn":
        body = _layers(p["num_layers"], e, h, lambda n_in: h * n_in + h * h + 2 * h)
    elif architecture == "lstm":
        body = _layers(p["num_layers"], e, h, lambda n_in: 4 * h * n_in + 4 * h * h + 8 * h)
    elif architecture == "mrnn":
        body = h * h + 2 * h * e + h
    elif architecture == "mlstm":
        body = 4 * h * h + 5 * h * e + 4 * h
    else:  # mmrnn, mmlstm
        K, groups = p["choices"], 1 if architecture == "mmrnn" else 4
        body = _layers(
            p["num_layers"],
            e,
            h,
            lambda n_in: groups * (K * h * h + h * n_in + h + K * (K + h + n_in)),
        )
    return _embedded(V, e, h, body)


def solve(
    architecture: str,
    vocab_size: int,
    budget: float,
    ratio: float = 1.0,
    fill: bool = False,
    **fixed,
) -> dict:
    """Largest hidden size h whose parameter count does not exceed ``budget``.

    For architectures with an inner size (``second_order_rnn``), m = round(ratio · h) (half up,
    with ``ratio`` taken as the exact decimal it prints as), unless ``inner_size`` is given in
    ``fixed``. Every other hyper-parameter the count needs (embedding_dim, num_layers, choices,
    use_d, use_e) goes in ``fixed``.

    ``fill`` (off by default; not docs/methods.md §6.4's rule): then grow the larger of h and m (h
    on a tie) one unit at a time while the count still fits. At extreme ratios one step of h changes
    the count by up to ~2% of the budget; filling trades the exact ratio for a count within ~0.1%.

    Returns ``{"hidden_size": h, "inner_size": m (inner-size architectures only), "params": n}``.
    Raises ValueError for an unknown architecture, a bad hyper-parameter or an impossible budget.
    """
    if architecture not in _HPARAMS:
        raise ValueError(f"unknown architecture {architecture!r}; known: {', '.join(_HPARAMS)}")
    if "hidden_size" in fixed:
        raise ValueError("hidden_size is what solve() chooses; do not fix it")
    has_inner = architecture in INNER_SIZE
    fixed_inner = "inner_size" in fixed
    if not has_inner and ratio != 1.0:
        raise ValueError(f"{architecture} has no inner size: ratio must be 1.0, not {ratio}")
    if fixed_inner and ratio != 1.0:
        raise ValueError("give either ratio or inner_size, not both")
    if has_inner and not ratio > 0:
        raise ValueError(f"ratio must be positive, not {ratio}")
    r = Fraction(str(ratio)) if isinstance(ratio, float) else Fraction(ratio)

    def config(h: int) -> dict:
        hp = {**fixed, "hidden_size": h}
        if has_inner and not fixed_inner:
            hp["inner_size"] = max(1, floor(r * h + Fraction(1, 2)))
        return hp

    def count(h: int) -> int:
        return parameter_count(architecture, vocab_size, config(h))

    _check(architecture, config(1))  # clear errors for missing / unknown hyper-parameters
    if count(1) > budget:
        raise ValueError(
            f"budget {budget} is below the smallest {architecture} ({count(1)} parameters at "
            f"hidden_size=1, V={vocab_size}, {fixed})"
        )
    # the count grows with h (m = round(r·h) does not decrease): exponential + binary search
    low, high = 1, 2
    while count(high) <= budget:
        low, high = high, 2 * high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if count(mid) <= budget else (low, mid)
    hp = config(low)
    if fill:
        grow = "inner_size" if has_inner and hp["inner_size"] > low else "hidden_size"
        while True:
            bigger = {**hp, grow: hp[grow] + 1}
            if parameter_count(architecture, vocab_size, bigger) > budget:
                break
            hp = bigger
    result = {"hidden_size": hp["hidden_size"]}
    if has_inner:
        result["inner_size"] = hp["inner_size"]
    result["params"] = parameter_count(architecture, vocab_size, hp)
    return result


def _check(architecture: str, hparams: dict) -> dict:
    """Validated hyper-parameters with defaults filled in."""
    if architecture not in _HPARAMS:
        raise ValueError(f"unknown architecture {architecture!r}; known: {', '.join(_HPARAMS)}")
    required, optional = _HPARAMS[architecture]
    unknown = set(hparams) - set(required) - set(optional) - _NO_PARAMETERS
    if unknown:
        raise ValueError(f"{architecture}: unknown hyper-parameters {sorted(unknown)}")
    missing = [name for name in required if name not in hparams]
    if missing:
        raise ValueError(f"{architecture}: missing hyper-parameters {missing}")
    p = {**optional, **hparams}
    for name in ("embedding_dim", "hidden_size", "inner_size", "num_layers", "choices"):
        if name in p and (not isinstance(p[name], int) or isinstance(p[name], bool) or p[name] < 1):
            raise ValueError(f"{architecture}: {name} must be a positive integer, not {p[name]!r}")
    return p

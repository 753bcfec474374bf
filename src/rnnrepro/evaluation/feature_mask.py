"""Feature masking at test time (major_minor §V-C, Fig. 5; docs/methods.md §12.6).

A trained model is evaluated on the test stream while a Bernoulli(P) share of the output
features of some of its layers is zeroed, "the same as the forward propagation of the model with
dropout in training": the kept features are scaled by 1 / (1 - P) and one mask per window and
column is shared over the window's steps (locked dropout) [A]. A model whose features depend on
each other more loses more perplexity as P grows.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from rnnrepro.evaluation.text import TextResult, evaluate_stream

ALL_LAYERS = "all"


def chosen_layers(model: nn.Module, layer: str) -> list[nn.Module]:
    """The layers a masking spec names: ``"all"`` or a 1-based layer number, of a model whose
    ``layers`` return ``(output [T, B, H], state)`` (``AWDLSTMLM``)."""
    layers = getattr(model, "layers", None)
    if not isinstance(layers, nn.ModuleList):
        raise ValueError(f"{type(model).__name__} has no list of layers to mask")
    if layer == ALL_LAYERS:
        return list(layers)
    if not layer.isdigit() or not 1 <= int(layer) <= len(layers):
        raise ValueError(
            f"masked layer {layer!r}: the model has layers 1-{len(layers)} (or {ALL_LAYERS!r})"
        )
    return [layers[int(layer) - 1]]


@torch.no_grad()
def evaluate_masked(
    model: nn.Module,
    ids: Sequence[int] | Tensor,
    layer: str,
    probability: float,
    mask_seed: int,
    batch_size: int,
    bptt: int,
    device: str | torch.device = "cpu",
) -> TextResult:
    """``evaluate_stream`` with the output of ``layer`` (``chosen_layers``) masked at rate
    ``probability``; the masks are drawn on the CPU from a generator seeded with ``mask_seed``
    (in window order, then layer order), so that a device changes no mask."""
    if not 0 <= probability < 1:
        raise ValueError(f"masking probability {probability} is not in [0, 1)")
    generator = torch.Generator().manual_seed(mask_seed)

    def mask_output(module: nn.Module, inputs: tuple, output: tuple) -> tuple:
        features, state = output
        mask = torch.empty(1, features.size(1), features.size(2))
        mask.bernoulli_(1 - probability, generator=generator).div_(1 - probability)
        return features * mask.to(features.device, features.dtype), state

    handles = (
        []
        if probability == 0
        else [module.register_forward_hook(mask_output) for module in chosen_layers(model, layer)]
    )
    try:
        return evaluate_stream(model.eval(), ids, batch_size, bptt, device)
    finally:
        for handle in handles:
            handle.remove()

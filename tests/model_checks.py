"""Shared assertion for the model tests: a fast recurrence against a naive formula."""

from __future__ import annotations

import torch


def assert_matches_naive(model, x, weights, naive) -> None:
    """Logits and every parameter gradient of ``model(x)`` equal those of ``naive(model, x)``
    (loss = sum of logits * weights); every gradient is non-zero."""

    def run(forward):
        model.zero_grad()
        logits = forward(model, x)
        (logits * weights).sum().backward()
        return logits.detach(), [p.grad.clone() for p in model.parameters()]

    logits, grads = run(lambda m, x: m(x)[0])
    naive_logits, naive_grads = run(naive)
    torch.testing.assert_close(logits, naive_logits)
    for grad, naive_grad in zip(grads, naive_grads, strict=True):
        assert grad.abs().sum() > 0
        torch.testing.assert_close(grad, naive_grad)

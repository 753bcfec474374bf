"""major_minor's study figures (Figs. 3-6) from synthetic run outputs: which run is a point of
which sweep, the band of Fig. 4, the ratios of Fig. 6 and the masking curves of Fig. 5."""

from __future__ import annotations

import csv
import json

import pytest

from rnnrepro.reporting.figures import FIGURES, Style
from rnnrepro.reporting.figures.sizes import ratio_label, read_sizes, sweep_points

STANDARDS = {"awd_lstm": "AWD-LSTM"}
C = [1150, 1150, 400]


def metrics(tmp_path, model, sizes, test_ppl, dataset="ptb_stream", proportions=None, experts=0):
    hparams = {"layer_sizes": sizes, "experts": experts}
    if proportions:
        hparams["major_proportions"] = proportions
    record = {
        "experiment": "major_minor", "dataset": dataset, "model": model, "seed": 1,
        "run": {"hparams": hparams}, "params": {"total": sum(sizes) * 1000},
        "val": {"ppl": test_ppl + 2}, "test": {"ppl": test_ppl},
    }  # fmt: skip
    path = tmp_path / dataset / model / "metrics.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record))
    return path


def sweep(tmp_path):
    paths = [metrics(tmp_path, "awd_lstm", C, 60.0)]
    for layer in (1, 2):
        for size, ppl in ((690, 60.2), (920, 60.6), (1380, 59.0)):
            sizes = list(C)
            sizes[layer - 1] = size
            paths.append(metrics(tmp_path, f"awd_lstm_layer{layer}_{size}", sizes, ppl))
    return paths


def test_each_run_is_a_point_of_the_standard_it_differs_from_in_one_layer(tmp_path):
    points = sweep_points(read_sizes(sweep(tmp_path)), STANDARDS).set_index("model")
    assert points.loc["awd_lstm", "layer"] == 0
    assert points.loc["awd_lstm_layer2_920", ["layer", "size", "standard"]].tolist() == [
        2, 920, "awd_lstm"
    ]  # fmt: skip
    stray = metrics(tmp_path, "two_layers", [690, 690, 400], 61.0)
    with pytest.raises(ValueError, match="two_layers on ptb_stream differs from every standard"):
        sweep_points(read_sizes([*sweep(tmp_path / "again"), stray]), STANDARDS)
    with pytest.raises(ValueError, match="none of the standard models"):
        sweep_points(read_sizes([stray]), STANDARDS)


@pytest.mark.parametrize("kind", ["layer_sizes", "size_band"])
def test_size_figures_are_drawn_and_fig4_lists_the_sizes_inside_the_band(tmp_path, kind):
    out = tmp_path / f"{kind}.png"
    FIGURES[kind](sweep(tmp_path), out, Style(notes=["Scale smoke."], labels=STANDARDS))
    assert out.stat().st_size > 10_000
    if kind == "size_band":
        from PIL import Image

        notes = Image.open(out).info["Description"]
        # within ±0.25 of 60.0: 0.6c (60.2) and 1.0c; not 0.8c (60.6) nor 1.2c (59.0)
        assert "AWD-LSTM/ptb_stream LSTM-1: 0.6c, 1.0c;" in notes


def test_ratio_figure_orders_the_ratios(tmp_path):
    paths = [
        metrics(tmp_path, f"r{p}", [1200, 1200, 400], 70 - 10 * p, proportions=[p] * 3)
        for p in (0.5, 0.9)
    ] + [metrics(tmp_path, "r1", [1150, 1150, 400], 64.0)]
    assert [ratio_label(p) for p in (0.5, 0.9, 1.0)] == ["5:5", "9:1", "10:0"]
    out = tmp_path / "ratio.png"
    FIGURES["major_ratio"](paths, out, Style())
    assert out.stat().st_size > 10_000


def test_masking_figure_counts_where_each_model_is_lowest(tmp_path):
    paths = []
    for model, slope in (("lm", 100.0), ("mmlm", 50.0)):
        path = tmp_path / f"{model}.csv"
        with path.open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(
                [
                    "experiment",
                    "dataset",
                    "model",
                    "seed",
                    "stage",
                    "params_total",
                    "scale",
                    "layer",
                    "probability",
                    "mask_seed",
                    "test_ppl",
                    "tokens",
                ]
            )
            for layer in ("all", "1"):
                for p in (0.0, 0.25, 0.5):
                    for seed in (1, 2):
                        ppl = 60 + slope * p + seed
                        writer.writerow(
                            [
                                "major_minor",
                                "ptb_stream",
                                model,
                                1,
                                "train",
                                21e6,
                                "smoke",
                                layer,
                                p,
                                seed,
                                ppl,
                                100,
                            ]
                        )
        paths.append(path)
    out = tmp_path / "masking.png"
    labels = {"lm": "LM", "mmlm": "MMLM"}
    FIGURES["feature_masking"](paths, out, Style(labels=labels))
    assert out.stat().st_size > 10_000
    from PIL import Image

    notes = Image.open(out).info["Description"]
    assert "all layers masked: MMLM 2/2" in notes and "layer 1 masked: MMLM 2/2" in notes
    assert "mean over 2 mask seed(s)" in notes and "LM 21.00M" in notes

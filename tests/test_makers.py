"""A new kind of table and a new kind of figure, each added where its kind lives (a ``Maker`` in
``rnnrepro.makers.MAKERS``; a drawing function in ``reporting.figures.FIGURES``) and declared
in a catalogue: the workflow's targets, a job's inputs and options follow, and the figure is
drawn by the generic figure script."""

from __future__ import annotations

import shlex
import types
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from pipeline_utils import base_config  # noqa: E402

from rnnrepro import makers, papers  # noqa: E402
from rnnrepro.papers import Output, Runs  # noqa: E402
from rnnrepro.reporting import figures  # noqa: E402
from rnnrepro.scripts import make_figure  # noqa: E402


def test_a_new_maker_and_figure_kind_are_one_entry_each(monkeypatch, tmp_path):
    drawn = {}

    def plot_lines(inputs, out, style):  # the new figure kind: lines per input file
        drawn["inputs"] = inputs
        counts = [len(Path(path).read_text().splitlines()) for path in inputs]
        plt.figure()
        plt.bar(range(len(counts)), counts)
        plt.savefig(out)
        plt.close()

    monkeypatch.setitem(figures.FIGURES, "lines", plot_lines)
    monkeypatch.setitem(
        makers.MAKERS,
        "summary",
        makers.Maker(
            "summarise_runs",
            lambda output, config, files: [*makers.title(output), "--strict"],
            {"metrics.json": "metrics"},
        ),
    )
    runs = Runs("second_order_lstm", ("dyck",), ("lstm",))
    catalogue = types.SimpleNamespace(
        OUTPUTS=(
            Output("test_summary", "A summary", "caption", "summary", runs, ("metrics.json",)),
            Output(
                "test_lines", "Lines", "caption", "figure", runs, ("history.csv",), kind="lines"
            ),
        )
    )
    monkeypatch.setitem(papers.CATALOGUES, "test_paper", catalogue)
    monkeypatch.setattr(papers, "KEYS", (*papers.KEYS, "test_paper"))
    config = base_config() | {"scale": "smoke"}

    assert makers.targets(config, "test_paper") == [
        "results/tables/test_summary.md",
        "results/figures/test_lines.png",
    ]
    found = makers.outputs()
    summary, lines = found["test_summary"], found["test_lines"]
    assert summary.paper == "test_paper" and not makers.is_figure(summary)
    metrics = [f"results/runs/{run.path}/metrics.json" for run in summary.select(config)]
    assert metrics  # the Dyck LSTM runs at smoke scale
    options = shlex.split(makers.options(summary, config, {"metrics": metrics}))
    assert options[: len(metrics) + 1] == ["--metrics", *metrics]
    assert options[len(metrics) + 1 : len(metrics) + 4] == ["--title", "A summary", "--strict"]
    assert "--note" in options  # the scale's reductions, as every output states them

    histories = []
    for k in range(3):
        histories.append(tmp_path / f"history{k}.csv")
        histories[-1].write_text("epoch\n" + "1\n" * (k + 1))
    options = shlex.split(makers.options(lines, config, {"inputs": list(map(str, histories))}))
    png = tmp_path / "lines.png"
    make_figure.main([*options, "--out", str(png)])
    assert drawn["inputs"] == list(map(str, histories))
    assert png.read_bytes().startswith(b"\x89PNG")

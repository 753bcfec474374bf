"""Code digests: editing a module reruns exactly the jobs that run it."""

from __future__ import annotations

import ast
import json
import shutil

import pytest
from pipeline_utils import ROOT, base_config, run_snakemake

from rnnrepro import provenance
from rnnrepro.provenance import byte_digest, closure, code_digest, imports, model_module

PKG = ROOT / "src/rnnrepro"


def names(paths, root=PKG):
    return {str(p.relative_to(root)) for p in paths}


@pytest.fixture
def package(tmp_path):
    """A copy of the package sources to edit."""
    return shutil.copytree(PKG, tmp_path / "rnnrepro", ignore=shutil.ignore_patterns("__pycache__"))


def test_closure_follows_package_imports_only():
    train = names(closure(("scripts/train.py",)))
    assert {"training.py", "tasks.py", "objectives.py", "data/batching.py"} <= train
    assert not any(
        name.startswith("models/") and name not in ("models/__init__.py", "models/base.py")
        for name in train
    )  # models load by name
    assert "models/_lstm_ops.py" in names(closure((model_module("attention_lstm"),)))
    assert names(imports(PKG / "scripts/make_table.py")) >= {"reporting/tables.py"}


def test_model_module_reads_the_registry():
    assert model_module("mmlstm") == "models/multi_matrix.py"
    assert model_module("assignment_lstm") == "models/attention_lstm.py"
    with pytest.raises(KeyError, match="unknown architecture"):
        model_module("transformer")


def test_digest_changes_with_the_code_a_job_runs(package):
    lstm = ("scripts/train.py", model_module("lstm", package))
    rnn = ("scripts/train.py", model_module("rnn", package))
    before = code_digest(*lstm, root=package), code_digest(*rnn, root=package)
    (package / "models/lstm.py").write_text((package / "models/lstm.py").read_text() + "X = 1\n")
    code_digest.cache_clear()
    after = code_digest(*lstm, root=package), code_digest(*rnn, root=package)
    assert after[0] != before[0] and after[1] == before[1]
    (package / "training.py").write_text((package / "training.py").read_text() + "X = 1\n")
    code_digest.cache_clear()
    assert code_digest(*rnn, root=package) != before[1]


def fresh_process_caches():
    """Forget what this process computed, as a new Snakemake start would."""
    for cached in (code_digest, provenance._cache, provenance._imports, provenance._tree_text):
        cached.cache_clear()


def test_the_disk_cache_gives_the_digests_computed_afresh(package, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    entries = ("scripts/train.py", model_module("lstm", package))
    fresh_process_caches()
    cold = code_digest(*entries, root=package)
    provenance._save_cache()
    saved = provenance.digest_cache_path()
    assert saved.is_relative_to(tmp_path / "cache") and saved.stat().st_size > 0
    fresh_process_caches()
    assert code_digest(*entries, root=package) == cold
    # the cache is what a warm start reads: a doctored entry is believed...
    data = json.loads(saved.read_text())
    data["digests"] = {key: "0" * 16 for key in data["digests"]}
    saved.write_text(json.dumps(data))
    fresh_process_caches()
    assert code_digest(*entries, root=package) == "0" * 16
    # ... but only for the same bytes: an edited module is parsed and digested again
    (package / "models/lstm.py").write_text((package / "models/lstm.py").read_text() + "X = 1\n")
    fresh_process_caches()
    edited = code_digest(*entries, root=package)
    assert edited not in ("0" * 16, cold)
    saved.write_text("{not json")  # a broken cache is ignored, then rewritten
    fresh_process_caches()
    assert code_digest(*entries, root=package) == edited
    provenance._save_cache()
    assert json.loads(saved.read_text())["digests"]
    fresh_process_caches()


def edit(path, old, new):
    """Replace the first ``old`` in ``path`` by ``new`` (and forget the cached digests)."""
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))
    code_digest.cache_clear()
    byte_digest.cache_clear()


def test_comments_docstrings_and_formatting_change_no_digest(package):
    """The digest is of syntax trees without docstrings: comments, docstrings (added, edited,
    their quotes), blank lines and line breaks leave it; the byte digest (what archives recorded
    before) changes with each."""
    job = ("scripts/train.py", model_module("lstm", package))
    digest, by_bytes = code_digest(*job, root=package), byte_digest(*job, root=package)
    training = package / "training.py"
    text = training.read_text()
    assert text.startswith('"""')
    end = text.index('"""', 3) + 3
    text = "'''An edited module docstring.'''" + text[end:]  # another docstring, other quotes
    text = text.replace("\n\n\n", "\n\n\n# a new comment\n\n", 1) + "\n\n\n# trailing comment\n"
    training.write_text(text)
    edit(
        training,
        "from __future__ import annotations",
        "from __future__ import (\n    annotations\n)",
    )
    lstm = package / "models/lstm.py"
    source = lstm.read_text()
    function = next(
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.FunctionDef) and ast.get_docstring(n) is None
    )
    first = function.body[0]
    indent = " " * first.col_offset
    added = f'{indent}"""An added docstring,\n{indent}over two lines."""  # and a comment\n'
    lines = source.splitlines(keepends=True)
    lstm.write_text("".join(lines[: first.lineno - 1] + [added] + lines[first.lineno - 1 :]))
    code_digest.cache_clear()
    byte_digest.cache_clear()
    assert byte_digest(*job, root=package) != by_bytes
    assert code_digest(*job, root=package) == digest


@pytest.mark.parametrize(
    "module,old,new",
    [
        ("training.py", "\nimport ", "\nimport math  # new\nimport "),  # an import added
        ("models/lstm.py", "\nclass ", "\nX = 'a string'\n\n\nclass "),  # a statement added
        ("models/lstm.py", "\nclass ", "\n'not a docstring: not the first statement'\nclass "),
        ("models/lstm.py", "self.", "self._added = None\n        self."),
        ("training.py", " + ", " - "),  # one operator
        ("training.py", "import torch", "import torch as torch"),  # an alias
    ],
)
def test_any_code_edit_changes_the_digest(package, module, old, new):
    job = ("scripts/train.py", model_module("lstm", package))
    digest = code_digest(*job, root=package)
    edit(package / module, old, new)
    assert code_digest(*job, root=package) != digest


def test_a_changed_constant_changes_the_digest(package):
    job = ("scripts/train.py", model_module("lstm", package))
    digest = code_digest(*job, root=package)
    training = package / "training.py"
    source = training.read_text()
    number = next(
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Constant) and type(n.value) is int and n.value > 1
    )
    lines = source.splitlines(keepends=True)
    line = lines[number.lineno - 1]
    end = number.end_col_offset
    lines[number.lineno - 1] = line[: number.col_offset] + str(number.value + 1) + line[end:]
    training.write_text("".join(lines))
    code_digest.cache_clear()
    assert code_digest(*job, root=package) != digest
    training.write_text(source)
    code_digest.cache_clear()
    assert code_digest(*job, root=package) == digest


def test_compiled_sources_count_for_the_models_built_on_them(package):
    """models/native.py lists its C++ source in DIGEST_FILES: editing it changes the digest of
    the runs of models with compiled loops, and of no other."""
    mmlstm = ("scripts/train.py", model_module("mmlstm", package))
    lstm = ("scripts/train.py", model_module("lstm", package))
    assert "models/kernels/recurrences.cpp" in names(closure(mmlstm, package), package)
    before = code_digest(*mmlstm, root=package), code_digest(*lstm, root=package)
    source = package / "models/kernels/recurrences.cpp"
    source.write_text(source.read_text() + "// edited\n")
    code_digest.cache_clear()
    after = code_digest(*mmlstm, root=package), code_digest(*lstm, root=package)
    assert after[0] != before[0] and after[1] == before[1]


def test_a_catalogue_edit_reruns_the_tables_not_the_runs(package):
    """papers/__init__.py imports the catalogues: the comparison tables' script (which reads
    their orderings) depends on them, training not."""
    table = ("scripts/make_table.py",)
    train = ("scripts/train.py", model_module("awd_lstm", package))
    assert "papers/major_minor.py" in names(closure(table, package), package)
    before = code_digest(*table, root=package), code_digest(*train, root=package)
    edit(package / "papers/major_minor.py", '"every Minor LSTM helps"', '"each Minor helps"')
    after = code_digest(*table, root=package), code_digest(*train, root=package)
    assert after[0] != before[0] and after[1] == before[1]


def test_adding_a_model_to_the_registry_reruns_no_other(package):
    digest = code_digest("scripts/train.py", "models/lstm.py", root=package)
    init = package / "models/__init__.py"
    init.write_text(
        init.read_text().replace('    "lstm": (', '    "new": ("lstm", "X"),\n    "lstm": (')
    )
    code_digest.cache_clear()
    assert model_module("new", package) == "models/lstm.py"
    assert code_digest("scripts/train.py", "models/lstm.py", root=package) == digest


@pytest.mark.slow
def test_editing_a_model_module_reruns_only_its_runs(tmp_path, monkeypatch):
    """Through Snakemake, on a copy of the workflow whose sources are edited."""
    # The Python time loops: built from the copy's own kernels/recurrences.cpp, the compiled
    # ones would take a minute and leave the shared build cache to be rebuilt by the next test.
    monkeypatch.setenv("RNNREPRO_KERNELS", "python")
    repo = tmp_path / "repo"
    for part in ("workflow", "profiles", "envs", "benchmarks"):
        shutil.copytree(ROOT / part, repo / part)
    for part in ("Snakefile", "config.yaml"):
        shutil.copy(ROOT / part, repo / part)
    shutil.copytree(PKG, repo / "src/rnnrepro", ignore=shutil.ignore_patterns("__pycache__"))
    config = base_config()
    config["scale"] = "smoke"
    targets = [
        f"results/runs/multi_matrix/dyck_m4/{model}/seed1/metrics.json"
        for model in ("lstm", "dyck_rnn")
    ]
    work = tmp_path / "work"
    work.mkdir()
    run_snakemake(work, config, *targets, snakefile=repo / "Snakefile")

    def planned() -> dict[str, int]:
        proc = run_snakemake(
            work, config, *targets, "-n", "--quiet", "rules", snakefile=repo / "Snakefile"
        )
        out = (proc.stdout + proc.stderr).splitlines()
        return {
            w[0]: int(w[1])
            for w in (line.split() for line in out)
            if len(w) == 2 and w[1].isdigit() and w[0] != "total"
        }

    assert planned() == {}  # nothing changed, nothing runs
    module = repo / "src/rnnrepro/models/dyck_rnn.py"
    module.write_text(module.read_text() + "\n\n# a comment\n")
    assert planned() == {}  # comments and formatting are not code
    module.write_text(module.read_text() + "\n_EDITED = True\n")
    assert planned() == {"train": 1, "evaluate_dyck": 1}  # dyck_rnn only
    run_snakemake(work, config, *targets, snakefile=repo / "Snakefile")
    log = (work / "results/logs/train/multi_matrix/dyck_m4/dyck_rnn/seed1.log").read_text()
    assert "it belongs to other settings, data or code" in log  # trained afresh, not resumed
    core = repo / "src/rnnrepro/training.py"
    core.write_text(core.read_text() + "\n_EDITED = True\n")
    assert planned() == {"train": 2, "evaluate_dyck": 2}

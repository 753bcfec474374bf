"""Helpers to run the pipeline from tests in a scratch directory."""

from __future__ import annotations

import copy
import functools
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


# libyaml where PyYAML has it: its pure-Python parser and emitter take ~0.25 s and ~0.17 s for
# config.yaml, paid by every test that builds a config and by every pipeline it writes one for
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
YAML_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@functools.cache
def _repository_config() -> dict:
    return yaml.load((ROOT / "config.yaml").read_text(), Loader=YAML_LOADER)


def base_config() -> dict:
    """The repository's config.yaml (a copy of its own for each call; parsed once)."""
    return copy.deepcopy(_repository_config())


def write_yaml(path: Path, data: dict) -> None:
    """``data`` as YAML at ``path`` (what ``yaml.safe_dump`` writes)."""
    path.write_text(yaml.dump(data, Dumper=YAML_DUMPER))


@functools.cache
def _snakemake_server() -> subprocess.Popen:
    server = [sys.executable, str(Path(__file__).with_name("snakemake_server.py"))]
    return subprocess.Popen(server, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def snakemake_cli(
    args: list[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """What ``python -m snakemake *args`` does and prints, in a process of its own forked from
    a server that has imported Snakemake (tests/snakemake_server.py, one a pytest process)."""
    server = _snakemake_server()
    with tempfile.TemporaryDirectory() as scratch:
        out, err = os.path.join(scratch, "stdout"), os.path.join(scratch, "stderr")
        request = {"argv": list(args), "cwd": os.getcwd(), "stdout": out, "stderr": err}
        request["env"] = dict(os.environ if env is None else env)
        server.stdin.write(json.dumps(request) + "\n")
        server.stdin.flush()
        code = server.stdout.readline()
        if not code:
            raise RuntimeError(f"tests/snakemake_server.py ended ({server.poll()})")
        stdout, stderr = Path(out).read_text(), Path(err).read_text()
    command = [sys.executable, "-m", "snakemake", *args]
    return subprocess.CompletedProcess(command, int(code), stdout, stderr)


def run_snakemake(
    workdir: Path, config: dict, *args: str, check: bool = True, snakefile: Path | None = None
):
    """Run the pipeline (``snakefile``, default this repository's) with ``config`` in
    ``workdir``: written to its config.yaml, which the Snakefile reads (README: --directory)."""
    write_yaml(workdir / "config.yaml", config)
    snakefile = str(snakefile or ROOT / "Snakefile")
    proc = snakemake_cli(
        ["--snakefile", snakefile, "--directory", str(workdir), "--cores", "2", *args]
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


# config.yaml's tolerances of a match, as every table script is given them
TOLERANCES = base_config()["reporting"]["tolerances"]


def dry_run_jobs(workdir: Path, config: dict, *targets: str) -> dict[str, int]:
    """The jobs a dry run of ``targets`` would run, by rule ({} when nothing is to be done)."""
    out = run_snakemake(workdir, config, *targets, "-n", "--quiet", "rules").stdout
    jobs = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and parts[0] not in ("total", "job"):
            jobs[parts[0]] = int(parts[1])
    return jobs


FIXTURE_WORDS = [
    "the",
    "<unk>",
    "company",
    "said",
    "N",
    "shares",
    "of",
    "stock",
    "were",
    "sold",
    "in",
    "a",
    "market",
    "trading",
    "investors",
    "'s",
    "profit",
    "rose",
    "to",
    "$",
    "million",
    "from",
    "last",
    "year",
    "as",
    "analysts",
    "expected",
]


def fixture_mirror(root: Path, extra_words: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """Fixture corpora under root/mirror and their registry overrides in root/sources.yaml
    (``extra_words`` join the first training sentence, so that they are in every vocabulary)."""
    sources = write_fixture_corpora(root / "mirror", extra_words=extra_words)
    write_yaml(root / "sources.yaml", sources)
    return root / "mirror", root / "sources.yaml"


SIGNALLING_TRAIN = """
import os, sys
import rnnrepro.scripts.train as script
import rnnrepro.translation_task  # the translation kind, as scripts/train_translation.py adds it

signum, epoch, batch = map(int, sys.argv[1:4])
make_task = script.make_task


def signalling_task(*args):
    task = make_task(*args)
    batches = task.batches

    def signalling_batches(e):
        for index, item in enumerate(batches(e)):
            if (e, index) == (epoch, batch):
                os.kill(os.getpid(), signum)
            yield item

    task.batches = signalling_batches
    return task


script.make_task = signalling_task
sys.exit(script.main(sys.argv[4:]))
"""


TRAIN_ENTRIES = ("rnnrepro.scripts.train", "rnnrepro.scripts.train_translation")


def train_signalled(cmd: list[str], signum: int, epoch: int, batch: int) -> int:
    """Run the training command ``cmd`` (``python -m rnnrepro.scripts.train ...``) so that the
    process receives ``signum`` as it takes batch ``batch`` of epoch ``epoch`` (both from 0);
    return its exit code. A signal sent by a test when a file appears lands wherever the run
    happens to be on a loaded machine (at an epoch's end, or mid-epoch); this one lands where
    the test says."""
    assert cmd[1] == "-m" and cmd[2] in TRAIN_ENTRIES, cmd[:3]
    args = [str(signum), str(epoch), str(batch), *cmd[3:]]
    return subprocess.run([cmd[0], "-c", SIGNALLING_TRAIN, *args], capture_output=True).returncode


def write_fixture_corpora(
    directory: Path, lines: int = 90, eval_lines: int = 24, extra_words: tuple[str, ...] = ()
) -> dict:
    """A small mirror laid out like shared/data (PTB word and char files in their formats).

    Returns a ``data_sources`` override: corpus -> file name -> {sha256, mirror_path}.
    """
    import hashlib
    import random

    rng = random.Random(7)

    def sentences(n: int, first: list[str] | None = None) -> list[list[str]]:
        out = [first] if first else []
        while len(out) < n:
            out.append([rng.choice(FIXTURE_WORDS) for _ in range(rng.randint(3, 14))])
        return out

    splits = {
        "train": sentences(lines, [*FIXTURE_WORDS, *extra_words]),
        "valid": sentences(eval_lines),
        "test": sentences(eval_lines),
    }
    sources: dict[str, dict] = {"ptb": {}, "ptb_char": {}, "wikitext2": {}, "wikitext103": {}}
    for split, sents in splits.items():
        word = "".join(f" {' '.join(s)} \n" for s in sents)
        char = " \n ".join(" ".join(" ".join(s).replace(" ", "_")) for s in sents) + " \n "
        # WikiText layout: a heading, blank lines, paragraphs of several sentences
        paragraphs = [sents[i : i + 3] for i in range(0, len(sents), 3)]
        wiki = " \n = Fixture = \n \n" + "".join(
            f" {' '.join(w for s in p for w in [*s, '.'])} \n \n" for p in paragraphs
        )
        for corpus, folder, content in (
            ("ptb", "ptb", word),
            ("ptb_char", "ptb-char", char),
            ("wikitext2", "wikitext-2", wiki),
            ("wikitext103", "wikitext-103", wiki),  # a stand-in: not the published files
        ):
            path = directory / folder / f"{split}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
            sources[corpus][f"{split}.txt"] = {
                "sha256": hashlib.sha256(content.encode()).hexdigest(),
                "mirror_path": f"{folder}/{split}.txt",
            }
            if corpus == "wikitext103":
                sources[corpus][f"{split}.txt"]["sha1"] = None  # the published SHA-1 differs
    pairs = [
        "template\tcondition\tgrammatical\tungrammatical\tungrammatical_2",
        "simple_agrmt\tsing\tthe company said\tthe company say\t",
        "simple_agrmt\tplur\tinvestors said\tinvestors says\t",
        "subj_rel\tsing\tthe company that sold stock rose\tthe company that sold stock rise\t",
        "simple_npi_anim\tpast\tno company has ever rose\tthe company has ever rose"
        "\tmost company has ever rose",
        "npi_across_anim\tpast\tno investors that the company said have ever sold"
        "\tthe investors that no company said have ever sold"
        "\tmost investors that the company said have ever sold",
    ]
    content = "\n".join(pairs) + "\n"
    (directory / "syneval").mkdir(parents=True, exist_ok=True)
    (directory / "syneval" / "emnlp2018_pairs.tsv").write_text(content)
    sources["syneval"] = {
        "emnlp2018_pairs.tsv": {
            "sha256": hashlib.sha256(content.encode()).hexdigest(),
            "mirror_path": "syneval/emnlp2018_pairs.tsv",
        }
    }
    return sources


LINZEN_VERBS = (("is", "are"), ("has", "have"))


def write_linzen_fixture(directory: Path, items: int = 12) -> dict:
    """Linzen agreement files laid out like shared/data/linzen: ``subj_agr_filtered.{text,gold}``
    (sentences with a verb of LINZEN_VERBS) and ``numpred.test.1`` ... ``.5``. Returns their
    ``data_sources`` entries (corpus ``linzen``)."""
    import hashlib
    import random

    rng = random.Random(11)
    texts, gold = [], []
    for _ in range(items):
        prefix = [rng.choice(FIXTURE_WORDS) for _ in range(rng.randint(2, 6))]
        singular, plural = rng.choice(LINZEN_VERBS)
        correct, wrong = (singular, plural) if rng.random() < 0.5 else (plural, singular)
        texts.append(" ".join([*prefix, correct, "the", "market", ".", "<eos>"]))
        gold.append(f"{len(prefix)}\t{correct}\t{wrong}\t{rng.randint(0, 2)}")
    files = {"subj_agr_filtered.text": texts, "subj_agr_filtered.gold": gold}
    for k in range(1, 6):
        files[f"numpred.test.{k}"] = [
            f"{rng.choice(['VBZ', 'VBP'])}\t"
            + " ".join(rng.choice(FIXTURE_WORDS) for _ in range(rng.randint(2, 8)))
            for _ in range(items // 2)
        ]
    sources = {}
    (directory / "linzen").mkdir(parents=True, exist_ok=True)
    for name, rows in files.items():
        content = "\n".join(rows) + "\n"
        (directory / "linzen" / name).write_text(content)
        sources[name] = {
            "sha256": hashlib.sha256(content.encode()).hexdigest(),
            "mirror_path": f"linzen/{name}",
        }
    return sources


def write_linzen_full_fixture(directory: Path, rows: int = 400) -> dict:
    """A gzipped stand-in for Linzen's ``agr_50_mostcommon_10K.tsv.gz`` (its columns, fixture
    words, verbs of LINZEN_VERBS); returns its ``data_sources`` entry (corpus ``linzen_full``)."""
    import gzip
    import hashlib
    import random

    rng = random.Random(13)
    header = [
        "sentence", "orig_sentence", "verb", "verb_pos", "verb_index", "n_intervening",
        "n_diff_intervening",
    ]  # fmt: skip
    lines = ["\t".join(header)]
    for _ in range(rows):
        prefix = [rng.choice(FIXTURE_WORDS) for _ in range(rng.randint(2, 7))]
        singular, plural = rng.choice(LINZEN_VERBS)
        verb, pos = (singular, "VBZ") if rng.random() < 0.5 else (plural, "VBP")
        words = [*prefix, verb, *(rng.choice(FIXTURE_WORDS) for _ in range(3))]
        n_diff = rng.randint(0, 3)
        n_intervening = n_diff + rng.choice([0, 0, 1])
        sentence = " ".join(words)
        lines.append(
            "\t".join(
                [
                    sentence,
                    sentence,
                    verb,
                    pos,
                    str(len(prefix) + 1),
                    str(n_intervening),
                    str(n_diff),
                ]
            )
        )
    content = gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0)
    path = directory / "linzen" / "agr_50_mostcommon_10K.tsv.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return {
        "agr_50_mostcommon_10K.tsv.gz": {
            "sha256": hashlib.sha256(content).hexdigest(),
            "mirror_path": "linzen/agr_50_mostcommon_10K.tsv.gz",
        }
    }


def run_track(root: Path, make_config, *targets: str) -> tuple[Path, dict]:
    """Make ``targets`` in root/work from fixture corpora under root, with the config
    ``make_config(mirror, sources)`` gives; returns the work directory and the config."""
    mirror, sources = fixture_mirror(root)
    config = make_config(str(mirror), str(sources))
    work = root / "work"
    work.mkdir()
    run_snakemake(work, config, *targets)
    return work, config


def load_script(relative: str):
    """A script of ``benchmarks/``, ``studies/`` or ``tools/`` (``tools/gpu_check.py``) as a
    module (scripts, not a package), with its folder on the path as running it puts it."""
    path = ROOT / relative
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    name = path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import would: its dataclasses look their module up
    spec.loader.exec_module(module)
    return module

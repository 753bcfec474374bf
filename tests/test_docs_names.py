"""The names the documentation writes in backticks exist: repository paths (``src/...``,
``benchmarks/...``, ...), modules and their attributes (``rnnrepro.x.y``) and config keys
(``reporting.tolerances``). Scans README.md, docs/*.md and the indexes of benchmarks/, studies/ and
tools/; the notes (benchmarks/notes/, each study's, each archive's) are dated records and keep the
names of their day. Text and imports only."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import yaml
from pipeline_utils import ROOT

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)((?:(?!\1)[^`]|`(?!`))+?)\1")
PATH_PREFIXES = (
    "src/",
    "docs/",
    "benchmarks/",
    "studies/",
    "tools/",
    "workflow/",
    "profiles/",
    "envs/",
    "tests/",
    ".ci/",
)
PATH_SUFFIXES = (".py", ".md", ".yaml", ".smk", ".sh", ".csv", "/")
MODULE = re.compile(r"(?<![\w./-])rnnrepro(?:\.[A-Za-z_]\w*)+")
DOTTED = re.compile(r"[A-Za-z_][\w-]*(?:\.[\w-]+)+")
# a file name, not a key: `training.csv` names a file even though `training` is a section
FILE_SUFFIX = re.compile(r"\.(?:csv|md|json|py|txt|tsv|pt|yaml|yml|log|png|pdf|svg|gz|tar|tgz|sh)$")
NOT_A_NAME = ("<", "*", "{", "$")
ROOMS = ("benchmarks", "studies", "tools")


def documents() -> list[Path]:
    """The Markdown files whose names are checked."""
    docs = sorted((ROOT / "docs").glob("*.md"))
    return [ROOT / "README.md", *docs, *(ROOT / room / "README.md" for room in ROOMS)]


def code_spans(text: str) -> list[tuple[int, str]]:
    """Each inline code span outside fenced blocks, with the line it starts on (1-based)."""
    lines = text.split("\n")
    in_fence = False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            in_fence = not in_fence
            lines[i] = ""
        elif in_fence:
            lines[i] = ""
    prose = "\n".join(lines)
    return [
        (prose.count("\n", 0, m.start()) + 1, m.group(2).strip())
        for m in CODE_SPAN.finditer(prose)
        if "\n\n" not in m.group(2)
    ]


def path_missing(token: str, root: Path) -> bool | None:
    """Whether ``token``, if it reads as a repository path, names nothing (None: not a path)."""
    while token.startswith("../"):
        token = token[3:]
    token = token.split("::")[0]
    if any(c in token for c in NOT_A_NAME) or "/" not in token:
        return None
    if not token.startswith(PATH_PREFIXES) or not token.endswith(PATH_SUFFIXES):
        return None
    return not (root / token).exists()


def module_missing(name: str) -> bool:
    """Whether ``name`` is neither an importable module nor an attribute of one (the longest
    importable prefix, then getattr for the rest)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(obj, attribute):
                return True
            obj = getattr(obj, attribute)
        return False
    return True


def key_missing(name: str, config: dict) -> bool | None:
    """Whether ``name`` (``section.key...``) reads as a config key and does not resolve in
    ``config`` (None: not a config key). The path may end anywhere, at a section or a leaf."""
    if any(c in name for c in (*NOT_A_NAME, "=", " ")) or not DOTTED.fullmatch(name):
        return None
    parts = name.split(".")
    if parts[0] not in config or FILE_SUFFIX.search(name):
        return None
    node = config
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return True
    return False


def missing_names(text: str, root: Path, config: dict) -> list[tuple[int, str, str]]:
    """Every backticked name of ``text`` that names nothing: (line, kind, name)."""
    found = []
    for line, span in code_spans(text):
        for token in span.split():
            if path_missing(token, root):
                found.append((line, "path", token))
        for name in MODULE.findall(span):
            if module_missing(name):
                found.append((line, "module", name))
        if key_missing(span, config):
            found.append((line, "config key", span))
    return found


@pytest.fixture(scope="module")
def config() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


@pytest.mark.parametrize("doc", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_name_a_document_writes_exists(doc: Path, config: dict):
    missing = missing_names(doc.read_text(), ROOT, config)
    where = doc.relative_to(ROOT)
    assert not missing, "names that do not exist:\n" + "\n".join(
        f"{where}:{line}: {kind} `{name}`" for line, kind, name in missing
    )


def test_the_checker_finds_made_up_names(config: dict):
    text = (
        "Made up: `src/rnnrepro/nope.py`, `python -m rnnrepro.nope --x`, `rnnrepro.cost.nope`,\n"
        "`reporting.nope`. Real: `src/rnnrepro/precision.py`, `rnnrepro.cost.scaled_epoch`,\n"
        "`reporting.tolerances`, `training.csv`, `results/runs/`, `src/<name>.py`.\n"
        "```\n`src/fenced/nope.py`\n```\n"
    )
    assert missing_names(text, ROOT, config) == [
        (1, "path", "src/rnnrepro/nope.py"),
        (1, "module", "rnnrepro.nope"),
        (1, "module", "rnnrepro.cost.nope"),
        (2, "config key", "reporting.nope"),
    ]

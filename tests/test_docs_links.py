"""The documentation's links and the indexes of its rooms: every relative Markdown link of the
README, docs/, benchmarks/ (README and notes), studies/ (index and each study's note), tools/
and the archives' notes reaches an existing file and, for a Markdown target, an existing
heading; benchmarks/README.md lists every note and script, studies/README.md every study,
tools/README.md every tool, each index staying short; each study is a unit (its note names its
command, and that command its scripts); each note's ``explains`` front matter names rows of the
paper numbers. Text only."""

from __future__ import annotations

import csv
import os
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from rnnrepro.data.names import family
from rnnrepro.reporting.accounts import account_notes

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
NOTES = BENCHMARKS / "notes"
STUDIES = ROOT / "studies"
TOOLS = ROOT / "tools"
ARCHIVES = BENCHMARKS / "results"
PAPER_NUMBERS = ROOT / "src" / "rnnrepro" / "reporting" / "paper_numbers.csv"
INDEX_MAX_LINES = 220

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")


def documents() -> list[Path]:
    """The Markdown files whose links are checked."""
    docs = [ROOT / "README.md", *(room / "README.md" for room in (BENCHMARKS, STUDIES, TOOLS))]
    docs += sorted((ROOT / "docs").glob("*.md")) + sorted(NOTES.glob("*.md"))
    return docs + account_notes(STUDIES, ARCHIVES)


def split_front_matter(text: str) -> tuple[dict, str]:
    """The YAML front matter (``---`` lines at the top) as a dict, and the text after it."""
    if not text.startswith("---\n"):
        return {}, text
    end = text.find("\n---\n", 4)
    assert end >= 0, "front matter without its closing ---"
    return yaml.safe_load(text[4:end]) or {}, text[end + 5 :]


def prose_lines(text: str) -> list[str]:
    """The lines outside code (fenced blocks and indented blocks after a paragraph break), with
    inline code spans blanked: what a reader sees as text, links and headings."""
    lines: list[str] = []
    in_fence = in_indented = in_list = False
    previous_blank = True
    for line in text.split("\n"):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        blank = not line.strip()
        indented = line.startswith(("    ", "\t"))
        if indented and not blank and (in_indented or (previous_blank and not in_list)):
            in_indented = True
            continue
        if not blank:
            in_indented = False
            if LIST_ITEM.match(line):
                in_list = True
            elif not line.startswith(" "):
                in_list = False
        previous_blank = blank
        lines.append(INLINE_CODE.sub("code", line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text (links as their text, no code marks) lowercased,
    punctuation other than ``-`` and ``_`` dropped, spaces as ``-``."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file, repeated headings numbered as GitHub does."""
    _, text = split_front_matter(path.read_text(encoding="utf-8"))
    seen: Counter[str] = Counter()
    found = set()
    in_fence = False
    for line in text.split("\n"):  # headings with their code marks: the slug drops them
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        match = None if in_fence else HEADING.match(line)
        if match:
            base = slug(match[2])
            found.add(f"{base}-{seen[base]}" if seen[base] else base)
            seen[base] += 1
    return found


def links(path: Path) -> list[str]:
    """The link targets of a Markdown file's prose."""
    _, text = split_front_matter(path.read_text(encoding="utf-8"))
    return [m[1] for line in prose_lines(text) for m in LINK.finditer(line)]


def broken_links(path: Path) -> list[str]:
    """The relative links of ``path`` whose file or heading does not exist."""
    broken = []
    for target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading #{anchor} in {os.path.relpath(resolved, ROOT)}")
    return broken


@pytest.mark.parametrize("doc", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_heading(doc: Path) -> None:
    assert broken_links(doc) == []


def test_the_slug_follows_githubs_rules() -> None:
    assert slug("Cluster execution (SLURM)") == "cluster-execution-slurm"
    assert slug("`fold1`: `so`'s Table 1") == "fold1-sos-table-1"
    assert slug("Steps, budgets and isolation") == "steps-budgets-and-isolation"


def test_the_benchmarks_readme_is_an_index_of_every_note() -> None:
    index = BENCHMARKS / "README.md"
    text = index.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= INDEX_MAX_LINES
    targets = [t.partition("#")[0] for t in links(index)]
    listed = {Path(t).name for t in targets if t.startswith("notes/") and t.endswith(".md")}
    notes = {p.name for p in NOTES.iterdir() if p.is_file()}
    assert notes, "benchmarks/notes/ is empty"
    assert sorted(listed - notes) == [], "listed in benchmarks/README.md, not in notes/"
    assert sorted(notes - listed) == [], "in notes/, not listed in benchmarks/README.md"


def scripts_of(folder: Path) -> list[str]:
    """The scripts of ``folder`` (not its subfolders)."""
    return sorted(p.name for p in folder.iterdir() if p.suffix in (".py", ".sh"))


@pytest.mark.parametrize("room", [BENCHMARKS, STUDIES, TOOLS], ids=lambda p: p.name)
def test_each_room_lists_every_script_of_its_own(room: Path) -> None:
    text = (room / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= INDEX_MAX_LINES
    assert [s for s in scripts_of(room) if f"`{s}`" not in text] == []
    folders = [p for p in room.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))]
    assert room != BENCHMARKS or sorted(p.name for p in folders) == ["notes", "results"]
    assert room != TOOLS or folders == []


def studies() -> list[Path]:
    return sorted(p for p in STUDIES.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def test_the_studies_readme_links_every_study_once() -> None:
    targets = [t.partition("#")[0] for t in links(STUDIES / "README.md")]
    listed = Counter(Path(t).parent.name for t in targets if t.endswith("/README.md"))
    listed = Counter({name: n for name, n in listed.items() if (STUDIES / name).is_dir()})
    assert sorted(listed) == [p.name for p in studies()]
    assert [name for name, n in listed.items() if n > 1] == []


def command_blocks(note: Path) -> str:
    """The fenced code of a note's **Command.** paragraph (up to its next bold paragraph)."""
    _, text = split_front_matter(note.read_text(encoding="utf-8"))
    start = text.find("**Command")
    assert start >= 0, f"{note.relative_to(ROOT)}: no **Command.** paragraph"
    end = text.find("\n**", start + 2)
    part = text[start : end if end > 0 else len(text)]
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", part, re.M | re.S)
    assert blocks, f"{note.relative_to(ROOT)}: its **Command.** gives no command block"
    return "\n".join(blocks)


@pytest.mark.parametrize("study", studies(), ids=lambda p: p.name)
def test_a_study_is_a_unit_its_note_reruns(study: Path) -> None:
    """A study's folder holds its note; the note's command names each of the folder's scripts
    by its path from the repository root, and every study path it names exists."""
    note = study / "README.md"
    assert note.is_file(), f"{study.name}: no README.md (its note)"
    command = command_blocks(note)
    named = set(re.findall(r"studies/[\w./-]+", command))
    assert sorted(n for n in named if "<" not in n and not (ROOT / n).exists()) == []
    text = note.read_text(encoding="utf-8")
    rel = f"studies/{study.name}/"
    assert [s for s in scripts_of(study) if f"{rel}{s}" not in text] == []


def paper_rows() -> set[tuple[str, str, str]]:
    with PAPER_NUMBERS.open(newline="", encoding="utf-8") as f:
        return {(row["paper"], row["dataset"], row["model"]) for row in csv.DictReader(f)}


def family_of(name: str) -> str | None:
    """The family of a dataset name, None for a name that is not a dataset's."""
    try:
        return family(name)
    except ValueError:
        return None


def dataset_matches(named: str, row_dataset: str) -> bool:
    """A note may name a row's dataset, its family (``dyck`` for ``dyck_m4``) or one of the
    family's datasets (``ptb_lines_unigram_fold1`` for the paper's ``ptb_lines_unigram`` rows)."""
    return named in (row_dataset, family_of(row_dataset)) or family_of(named) == row_dataset


def test_every_explains_entry_names_rows_of_the_paper_numbers() -> None:
    rows = paper_rows()
    bad = []
    for note in [*sorted(NOTES.glob("*.md")), *account_notes(STUDIES, ARCHIVES)]:
        meta, _ = split_front_matter(note.read_text(encoding="utf-8"))
        entries = meta.get("explains", [])
        assert isinstance(entries, list), f"{note.name}: explains is not a list"
        for entry in entries:
            parts = str(entry).split("/")
            if len(parts) not in (2, 3):
                bad.append(f"{note.relative_to(ROOT)}: {entry!r} is not paper/dataset[/model]")
                continue
            paper, dataset, model = parts[0], parts[1], parts[2] if len(parts) == 3 else None
            if not any(
                p == paper and dataset_matches(dataset, d) and model in (None, m)
                for p, d, m in rows
            ):
                bad.append(f"{note.relative_to(ROOT)}: no row of paper_numbers.csv for {entry!r}")
    assert bad == []

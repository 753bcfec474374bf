"""Which source files a job runs, and a digest of them for the rules' params.

Snakemake's ``code`` rerun trigger sees a rule's own shell command, not the Python modules the
command runs. A rule therefore carries ``code_digest(entry, ...)`` in its params: the hash of
the entry modules and of every package module they import, followed transitively through
static imports. Editing one model's module changes the digest of exactly the runs of that model;
editing the training core changes the digest of every training job.

The digest is of the modules' syntax trees without their docstrings, not of their bytes: a
comment, a docstring, blank lines, line breaks or quotes change no digest, so they rerun
nothing; any change of what the code does (a statement, a name, a constant, an annotation, the
order of definitions) does. ``byte_digest`` is the digest of the files' bytes that archives
saved until 2026-11-27 record (``python -m rnnrepro.scripts.archive``).

Parsing every module costs about a second and a half at each Snakemake start, so what parsing
gives (a module's imports and its syntax tree's text) is kept in a cache on disk
(``digest_cache_path``) keyed by each file's path and bytes: unchanged files are not parsed
again, and the digests are the same with or without the cache.

Model modules are imported lazily by name (``rnnrepro.models.build_model``), so they never enter
another module's closure through the registry: each training job names its model's module.
Pure Python (no torch): the Snakefile imports it.
"""

from __future__ import annotations

import ast
import atexit
import hashlib
import json
import os
import sys
from functools import cache
from pathlib import Path

from rnnrepro.fileio import write_text_atomic

PACKAGE = "rnnrepro"
ROOT = Path(__file__).resolve().parent


def _module_file(dotted: str, root: Path) -> Path | None:
    """The file of package module ``rnnrepro.a.b`` (``a/b.py`` or ``a/b/__init__.py``)."""
    parts = dotted.split(".")[1:]
    candidates = [root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")]
    if not parts:
        candidates = [root / "__init__.py"]
    return next((c for c in candidates if c.is_file()), None)


def _dotted(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([PACKAGE, *parts])


def imports(path: Path, root: Path = ROOT) -> frozenset[Path]:
    """Package modules imported by ``path`` (absolute or relative imports, any depth), and the
    files it lists in ``DIGEST_FILES``."""
    return _imports(path, root, _file_digest(path))


@cache
def _imports(path: Path, root: Path, file_digest: bytes) -> frozenset[Path]:
    """``imports`` of ``path`` with these bytes (resolved once per process)."""
    key = f"{path.relative_to(root)}\0{file_digest.hex()}"
    cached = _cache()["imports"].get(key)
    if cached is None:
        source = path.read_text(encoding="utf-8")
        cached = _cache()["imports"][key] = _import_names(path, root, source)
        _UNSAVED[0] = True
    names, files = cached
    found = {path.parent / name for name in files}
    for name in names:  # resolved against the files there are now: the tree may have changed
        file = _module_file(name, root)
        if file is not None and file != path:
            found.add(file)
        # importing a.b.c runs the __init__ of a and a.b too
        parent = name.rpartition(".")[0]
        while parent.startswith(PACKAGE):
            if (init := _module_file(parent, root)) is not None:
                found.add(init)
            parent = parent.rpartition(".")[0]
    return frozenset(found)


def _digest_files(tree: ast.Module) -> list[str]:
    """Non-Python files a module builds from (e.g. C++ sources), listed in its module-level
    ``DIGEST_FILES`` tuple literal, relative to the module's directory."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            getattr(target, "id", "") == "DIGEST_FILES" for target in node.targets
        ):
            return sorted(ast.literal_eval(node.value))
    return []


def _import_names(path: Path, root: Path, source: str) -> list[list[str]]:
    """The package modules ``source`` may import (dotted names: "from .data import dyck" names
    may be submodules or attributes) and its ``DIGEST_FILES``."""
    module = _dotted(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(source, str(path))
    names: dict[str, None] = {}
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                base_name = ".".join(base + ([node.module] if node.module else []))
            else:
                base_name = node.module or ""
            targets = [base_name] + [f"{base_name}.{alias.name}" for alias in node.names]
        names |= {n: None for n in targets if n == PACKAGE or n.startswith(PACKAGE + ".")}
    return [list(names), _digest_files(tree)]


def closure(entries: tuple[str, ...], root: Path = ROOT) -> list[Path]:
    """The entry modules (paths relative to the package, e.g. ``scripts/train.py``) and every
    package module they import, transitively; sorted."""
    todo = [root / entry for entry in entries]
    for path in todo:
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such module in {root}")
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        if path.suffix == ".py":
            todo.extend(imports(path, root) - seen)
    return sorted(seen)


# The file beside a run that src/rnnrepro/scripts/archive.py restored although other code trained
# it (``restore --keep-runs-of-other-code``): that run's manifest row, commit included.
KEPT_FROM_ARCHIVE = ".kept_from_archive.json"

DIGEST_KIND = "syntax"
"""What ``code_digest`` hashes (archives record it beside their digests); ``byte_digest``'s is
``"bytes"``."""


def _source(path: Path, root: Path) -> bytes:
    """The bytes that count for ``path`` in ``byte_digest``: all of it, except the model
    registry's literal in models/__init__.py (adding a model must not rerun the others; each
    job names its module)."""
    data = path.read_bytes()
    if path != root / "models/__init__.py":
        return data
    node = _registry_node(root)
    lines = data.splitlines(keepends=True)
    return b"".join(lines[: node.lineno - 1] + lines[node.end_lineno :])


def _syntax(path: Path, root: Path) -> bytes:
    """What counts for ``path`` in ``code_digest``: a Python module's syntax tree without
    docstrings and positions (and, in models/__init__.py, without the registry's literal); the
    bytes of any other file (the C++ sources in ``DIGEST_FILES``)."""
    if path.suffix != ".py":
        return path.read_bytes()
    return _tree_text(path, root, path.read_text(encoding="utf-8")).encode()


@cache
def _tree_text(path: Path, root: Path, source: str) -> str:
    tree = ast.parse(source, str(path))
    if path == root / "models/__init__.py":
        tree.body = [node for node in tree.body if not _is_registry(node)]
    for node in list(ast.walk(tree)):
        if isinstance(node, _DOCUMENTED) and node.body and _is_docstring(node.body[0]):
            node.body = node.body[1:]
    return _dump(tree)


_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _dump(node) -> str:
    """A syntax tree as text: each node's type and its fields by name, no positions. Fields that
    are None or empty are left out, as fields new in a later Python (e.g. ``type_params``, 3.12)
    are when unused, and ``ast.dump``'s own output changed in 3.13."""
    if isinstance(node, ast.AST):
        fields = []
        for name in node._fields:
            value = getattr(node, name, None)
            if value is None or (isinstance(value, list) and not value):
                continue
            fields.append(f"{name}={_dump(value)}")
        return f"{type(node).__name__}({', '.join(fields)})"
    if isinstance(node, list):
        return f"[{', '.join(_dump(item) for item in node)}]"
    return repr(node)


def _digest(entries: tuple[str, ...], root: Path, content) -> str:
    """The digest of ``content`` of the closure's files; cached on disk by their paths and bytes
    (the content functions read nothing else)."""
    files = closure(entries, root)
    key = hashlib.sha256(content.__name__.encode())
    for path in files:
        key.update(str(path.relative_to(root)).encode() + b"\0")
        key.update(_file_digest(path))
    found = _cache()["digests"].get(key.hexdigest())
    if found is None:
        digest = hashlib.sha256()
        for path in files:
            relative = str(path.relative_to(root)).encode()
            digest.update(relative + b"\0" + content(path, root) + b"\0")
        found = _cache()["digests"][key.hexdigest()] = digest.hexdigest()[:16]
        _UNSAVED[0] = True
    return found


def _file_digest(path: Path) -> bytes:
    """sha256 of a file's bytes (read again only when its size or time changed)."""
    stat = path.stat()
    return _bytes_digest(path, stat.st_size, stat.st_mtime_ns)


@cache
def _bytes_digest(path: Path, size: int, mtime_ns: int) -> bytes:
    return hashlib.sha256(path.read_bytes()).digest()


def digest_cache_path() -> Path:
    """Where parsed imports and digests are kept: ``$XDG_CACHE_HOME/rnnrepro`` (default
    ``~/.cache/rnnrepro``), one file per Python version (its syntax trees differ)."""
    home = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(home) / "rnnrepro" / f"digests-py{sys.version_info[0]}{sys.version_info[1]}.json"


_CACHE_ENTRIES = 20_000  # past this, the older half is dropped
_UNSAVED = [False]  # entries added since the cache was read: written when the process exits


@cache
def _cache() -> dict[str, dict]:
    """The disk cache as read at the first digest of this process (empty when missing or
    unreadable)."""
    try:
        data = json.loads(digest_cache_path().read_text())
        if not (isinstance(data.get("imports"), dict) and isinstance(data.get("digests"), dict)):
            data = {"imports": {}, "digests": {}}
    except (OSError, ValueError, AttributeError):
        data = {"imports": {}, "digests": {}}
    atexit.register(_save_cache)
    return data


def _save_cache() -> None:
    """Write the cache (atomically; other processes' entries written since are merged in).
    A cache that cannot be written is no error: the digests are computed each time."""
    if not _UNSAVED[0]:
        return
    path = digest_cache_path()
    ours = _cache()
    try:
        theirs = json.loads(path.read_text())
        for part in ours:
            ours[part] = {**theirs.get(part, {}), **ours[part]}
    except (OSError, ValueError, AttributeError):
        pass
    for part, entries in ours.items():
        if len(entries) > _CACHE_ENTRIES:
            ours[part] = dict(list(entries.items())[len(entries) // 2 :])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(ours))
        _UNSAVED[0] = False
    except OSError:
        pass


@cache
def code_digest(*entries: str, root: Path = ROOT) -> str:
    """sha256 (first 16 hex digits) of the modules in ``closure(entries)``: of each one's path
    and syntax tree without docstrings (``_syntax``), so that comments, docstrings and
    formatting do not count and any change of code does."""
    return _digest(entries, root, _syntax)


@cache
def byte_digest(*entries: str, root: Path = ROOT) -> str:
    """The digest ``code_digest`` was until 2026-11-27: of the files' bytes, so that any edit
    counts, a comment too. Kept to read the digests archives recorded then."""
    return _digest(entries, root, _source)


def architecture_names(root: Path = ROOT) -> tuple[str, ...]:
    """The architectures of the model registry, in its order."""
    return tuple(_registry(root))


def model_module(architecture: str, root: Path = ROOT) -> str:
    """The module (relative path) defining ``architecture`` in ``rnnrepro.models``."""
    registry = _registry(root)
    if architecture not in registry:
        raise KeyError(f"unknown architecture {architecture!r}")
    return f"models/{registry[architecture][0]}.py"


def _registry(root: Path) -> dict[str, tuple[str, str]]:
    return ast.literal_eval(_registry_node(root).value)


def _registry_node(root: Path) -> ast.AnnAssign:
    """The ``REGISTRY: ... = {...}`` statement of models/__init__.py (read without torch)."""
    return _registry_statement(root, (root / "models/__init__.py").read_text(encoding="utf-8"))


@cache
def _registry_statement(root: Path, source: str) -> ast.AnnAssign:
    tree = ast.parse(source)
    for node in tree.body:
        if _is_registry(node):
            return node
    raise LookupError(f"{root}/models/__init__.py defines no REGISTRY literal")


def _is_registry(node: ast.stmt) -> bool:
    return isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "REGISTRY"


@cache
def architecture_hparams(architecture: str, root: Path = ROOT) -> tuple[tuple[str, ...], ...]:
    """``(required, optional)``: the hyper-parameters ``build_model(architecture, vocab, ...)``
    takes, i.e. the arguments of its class's ``__init__`` after ``vocab``, read from the source
    (no torch) and following base classes of the same module. LookupError when they cannot be
    read so (``**kwargs``, a base class from elsewhere)."""
    module, name = _registry(root)[architecture]
    path = root / f"models/{module}.py"
    classes = {
        node.name: node
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.ClassDef)
    }
    init = None
    while init is None:
        if name not in classes:
            raise LookupError(f"{path}: no class {name} (the __init__ of {architecture})")
        node = classes[name]
        init = next(
            (f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"),
            None,
        )
        bases = [base.id for base in node.bases if isinstance(base, ast.Name)]
        name = bases[0] if bases else ""
    args = init.args
    if args.kwarg or args.vararg:
        raise LookupError(f"{path}: {architecture}'s __init__ takes *args or **kwargs")
    names = [a.arg for a in (*args.posonlyargs, *args.args)][2:]  # after self, vocab
    with_default = len(args.defaults)
    required = names[: len(names) - with_default]
    optional = names[len(names) - with_default :]
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        (optional if default is not None else required).append(arg.arg)
    return tuple(required), tuple(optional)

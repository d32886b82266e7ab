"""Checks the layout rules of services/: which package may import which, and the size limits.

    uv run python scripts/check_layout.py            # the repository's own tree
    uv run python scripts/check_layout.py --root DIR # another tree with a services/ folder

Rules (docs/architecture.md, "The packages and their rules"):
- each package imports only the packages its row of ALLOWED names (imports inside functions and
  under TYPE_CHECKING count: a dependency is a dependency);
- green never reaches purple, and purple never reaches green, not even through a third package
  (the SWE-bench harness uses the agent; green's SWE-bench kind may use only the harness's
  modules that stay clear of the agent);
- no import circle among the modules of services/ (imports inside functions and under
  TYPE_CHECKING count), so every package reads from its top down;
- no module over MAX_MODULE_LINES lines, no function over MAX_FUNCTION_LINES lines;
- every module starts with a docstring whose first line says what it is for;
- green's own folder holds only the files of GREEN_TOP_LEVEL (the package, its entry point, the
  app that wires it, its settings): every other module lives in the folder whose name says what
  it holds (``edge/``, ``tasks/``, ``ledger/``, ``assessments/``, ``store/``, ``kinds/``, a
  face), so no new module lands flat beside them;
- no ``asyncio.wait_for``: on Python 3.11 it loses a cancel that meets its result in the same
  loop turn, and a task that ignores its cancel never ends (``asyncio.timeout`` instead;
  services/shared/aio.py);
- a task kind's own modules (``services/green/kinds/<name>/``) are imported only by that kind
  and by the registry (``kinds/registry.py``): the rest of green reaches a kind through the
  protocols beside them (``kinds/base.py``, ``kinds/datasets.py``, ``kinds/errors.py``,
  ``kinds/metrics.py``), with no exception;
- HTTP clients are made by services/shared/http.py (the process's one TLS context): elsewhere no
  ``httpx.Client``/``httpx.AsyncClient``, no one-shot ``httpx.get`` (and the like), and no OpenAI
  client without ``http_client=``: each would parse the root certificates again, 42 ms of CPU;
- the long-running services' thread pools (green's, purple's, the sandbox's) are made by
  services/shared/threads.py (``started_pool``: every thread starts with the pool): there no
  ``ThreadPoolExecutor(...)``, which starts threads as a backlog first needs them and keeps
  them, so a process grows with its worst moment and reads as a leak (a CLI's pool is short-lived);
- the identifier ``arvo_id`` (a name or a string, not a comment) appears only in the ARVO kind,
  in past migrations, and in the modules of ARVO_ID_ALLOWED (the documented deprecated alias):
  elsewhere a task is a ``TaskRef`` and the id within its kind is ``ref_id``;
- README.md and docs/*.md say what is and why, not what was: their prose (code blocks and
  inline code left out) has none of HISTORY_PHRASES (history lives in commit messages).

Exits 1 and prints one line per broken rule; prints a one-line summary and exits 0 otherwise.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80

ALLOWED: dict[str, set[str]] = {
    "shared": set(),
    "sandbox": {"shared"},
    "green": {"shared", "sandbox", "swebench"},
    "purple": {"shared"},
    "swebench": {"shared", "sandbox", "purple"},
    "arena": {"shared"},
    "byoa": {"shared"},
}
"""Package -> the packages it may import (besides itself)."""

NEVER_REACHES: dict[str, str] = {"green": "purple", "purple": "green"}
"""Package -> the package none of its modules may reach through any chain of imports."""

GREEN_TOP_LEVEL: frozenset[str] = frozenset({"__init__.py", "__main__.py", "app.py", "config.py"})
"""The only files of ``services/green/`` itself; every other module of green is in a folder."""

KINDS_PACKAGE = "services.green.kinds"
KIND_REGISTRY = "services.green.kinds.registry"
"""The one module outside a kind that names every kind (one registration line each)."""

ARVO_ID = "arvo_id"
ARVO_ID_HOME = "services.green.kinds.arvo"
ARVO_ID_ALLOWED: frozenset[str] = frozenset(
    {
        "services/green/api/routes/tasks.py",  # the deprecated request/query alias
        "services/green/store/models.py",  # the deprecated alias of ref_id in the task view
        "services/shared/outcome.py",  # the deprecated alias in an outcome record (and read back)
        "services/arena/results.py",  # results.json written before task kinds (schema 1)
    }
)
"""Files outside the ARVO kind and past migrations that may still name ``arvo_id``. Meant to
shrink to the documented deprecated alias (the task view and POST /tasks); tighten it as the
other uses go."""


@dataclass
class Module:
    name: str
    """Dotted name, e.g. ``services.green.app``."""
    path: Path
    """Relative to the checked root."""
    lines: int
    imports: set[str] = field(default_factory=set)
    """Dotted names of the project's modules it imports (resolved to existing modules)."""

    @property
    def package(self) -> str:
        parts = self.name.split(".")
        return parts[1] if len(parts) > 1 else ""


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _from_module(node: ast.ImportFrom, base: list[str]) -> str:
    """The module a ``from ... import`` names (a relative one resolved against ``base``, the
    importing module's package)."""
    if not node.level:
        return node.module or ""
    anchor = base[: len(base) - node.level + 1]
    return ".".join(anchor + ([node.module] if node.module else []))


def imported_names(tree: ast.Module, name: str, is_package: bool) -> Iterator[str]:
    """Every dotted name an import statement of the module names (relative ones resolved)."""
    base = name.split(".") if is_package else name.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            prefix = _from_module(node, base)
            yield prefix
            yield from (f"{prefix}.{alias.name}" for alias in node.names)


def load(root: Path) -> tuple[dict[str, Module], dict[str, ast.Module]]:
    modules: dict[str, Module] = {}
    trees: dict[str, ast.Module] = {}
    for path in sorted((root / "services").rglob("*.py")):
        name = module_name(root, path)
        text = path.read_text(encoding="utf-8")
        trees[name] = ast.parse(text, filename=str(path))
        modules[name] = Module(name, path.relative_to(root), len(text.splitlines()))
    for name, tree in trees.items():
        is_package = modules[name].path.name == "__init__.py"
        for dotted in imported_names(tree, name, is_package):
            if dotted in modules and dotted != name:
                modules[name].imports.add(dotted)
    return modules, trees


def direction_errors(modules: dict[str, Module]) -> Iterator[str]:
    for mod in modules.values():
        allowed = ALLOWED.get(mod.package)
        if allowed is None:
            if mod.package:
                yield f"{mod.path}: package services.{mod.package} has no row in ALLOWED"
            continue
        for target in sorted(mod.imports):
            other = modules[target].package
            if other and other != mod.package and other not in allowed:
                yield f"{mod.path}: services.{mod.package} must not import {target}"


def reach_errors(modules: dict[str, Module]) -> Iterator[str]:
    for source, forbidden in NEVER_REACHES.items():
        for mod in modules.values():
            if mod.package != source:
                continue
            chain = _path_to(modules, mod.name, forbidden)
            if chain and len(chain) > 2:  # direct imports are reported by direction_errors
                yield f"{mod.path}: services.{source} reaches services.{forbidden}: {' -> '.join(chain)}"


def _path_to(modules: dict[str, Module], start: str, package: str) -> list[str] | None:
    """The shortest import chain from ``start`` to any module of ``package`` (breadth first)."""
    parent: dict[str, str | None] = {start: None}
    frontier = [start]
    while frontier:
        nxt: list[str] = []
        for name in frontier:
            for target in sorted(modules[name].imports):
                if target in parent:
                    continue
                parent[target] = name
                if modules[target].package == package:
                    chain = [target]
                    while (prev := parent[chain[-1]]) is not None:
                        chain.append(prev)
                    return chain[::-1]
                nxt.append(target)
        frontier = nxt
    return None


def _modules_named(tree: ast.Module, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The project's modules the module's imports name, each once: ``from pkg import sub``
    names ``pkg.sub`` (a module) rather than ``pkg``; ``from pkg import name`` names ``pkg``."""
    base = name.split(".") if is_package else name.split(".")[:-1]
    named: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            prefix = _from_module(node, base)
            for alias in node.names:
                sub = f"{prefix}.{alias.name}"
                named.add(sub if sub in known else prefix)
    return {n for n in named if n in known and n != name}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph`` (its strongly connected parts of two modules or more,
    by Tarjan's algorithm, without recursion), each sorted, in name order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(graph[start])))]
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1:
                    found.append(sorted(part))
    return sorted(found)


def _loop_through(graph: dict[str, set[str]], members: list[str]) -> list[str]:
    """One loop of imports through the circle's first module and back (breadth first)."""
    start, inside = members[0], set(members)
    parent: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt: list[str] = []
        for node in frontier:
            for target in sorted(graph[node] & inside):
                if target == start:
                    back = [node]
                    while back[-1] != start:
                        back.append(parent[back[-1]])
                    return [*back[::-1], start]
                if target not in parent:
                    parent[target] = node
                    nxt.append(target)
        frontier = nxt
    return members  # not reached: every member of a circle lies on a loop through the first


def circle_errors(modules: dict[str, Module], trees: dict[str, ast.Module]) -> Iterator[str]:
    """One line per import circle in services/ (imports inside functions and under
    TYPE_CHECKING count: a module that needs another's type at a seam depends on it)."""
    known = set(modules)
    graph = {
        name: _modules_named(tree, name, modules[name].path.name == "__init__.py", known)
        for name, tree in trees.items()
    }
    for members in _circles(graph):
        loop = _loop_through(graph, members)
        yield (
            f"{modules[members[0]].path}: import circle {' -> '.join(loop)}: move what they "
            "share to the module that owns it, or to a Protocol at the seam (hiding an import "
            "under TYPE_CHECKING or in a function does not open the circle)"
        )


def size_errors(modules: dict[str, Module], trees: dict[str, ast.Module]) -> Iterator[str]:
    for name, tree in trees.items():
        path = modules[name].path
        lines = modules[name].lines
        if lines > MAX_MODULE_LINES:
            yield f"{path}: {lines} lines (the limit is {MAX_MODULE_LINES})"
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    yield (
                        f"{path}:{node.lineno}: function {node.name} has {length} lines "
                        f"(the limit is {MAX_FUNCTION_LINES})"
                    )


def docstring_errors(modules: dict[str, Module], trees: dict[str, ast.Module]) -> Iterator[str]:
    for name, tree in trees.items():
        if not tree.body:
            continue  # an empty __init__.py marks a package and says nothing
        doc = ast.get_docstring(tree)
        if not doc or not doc.strip().splitlines()[0].strip():
            yield f"{modules[name].path}: no module docstring saying what the module is for"


def _uses_wait_for(node: ast.AST) -> bool:
    """``asyncio.wait_for`` called or referenced, or ``wait_for`` imported from asyncio."""
    if isinstance(node, ast.Attribute) and node.attr == "wait_for":
        return isinstance(node.value, ast.Name) and node.value.id == "asyncio"
    if isinstance(node, ast.ImportFrom) and node.module == "asyncio":
        return any(alias.name == "wait_for" for alias in node.names)
    return False


def wait_for_errors(modules: dict[str, Module], trees: dict[str, ast.Module]) -> Iterator[str]:
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if _uses_wait_for(node):
                yield (
                    f"{modules[name].path}:{node.lineno}: asyncio.wait_for can lose a cancel on "
                    "Python 3.11; use asyncio.timeout (services/shared/aio.py)"
                )


HTTPX_CLIENTS = {"Client", "AsyncClient"}
HTTPX_ONE_SHOT = {"get", "post", "put", "patch", "delete", "head", "options", "request", "stream"}
OPENAI_CLIENTS = {"OpenAI", "AsyncOpenAI"}
HTTP_HOME = "services.shared.http"
"""The one module that makes httpx clients (on the process's shared TLS context)."""


def _builds_its_own_tls(node: ast.AST) -> str | None:
    """What a call that would build a TLS context of its own is called, else None: an httpx
    client or one-shot call (``httpx.get`` and the like each make a client), or an OpenAI
    client not handed an ``http_client=`` (it would make its own httpx client)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    owner, name = node.func.value, node.func.attr
    if not isinstance(owner, ast.Name):
        return None
    if owner.id == "httpx" and name in HTTPX_CLIENTS | HTTPX_ONE_SHOT:
        return f"httpx.{name}"
    given = any(k.arg == "http_client" for k in node.keywords)
    if owner.id == "openai" and name in OPENAI_CLIENTS and not given:
        return f"openai.{name} without http_client="
    return None


def tls_errors(modules: dict[str, Module], trees: dict[str, ast.Module]) -> Iterator[str]:
    for name, tree in trees.items():
        if name == HTTP_HOME:
            continue
        for node in ast.walk(tree):
            if what := _builds_its_own_tls(node):
                yield (
                    f"{modules[name].path}:{node.lineno}: {what} parses the root certificates "
                    "again (42 ms of CPU); make it with services/shared/http.py"
                )


THREADS_HOME = "services.shared.threads"
"""The one module that makes thread pools (all their threads started with them)."""
LONG_RUNNING = {"green", "purple", "sandbox", "shared"}
"""The packages whose pools live as long as a service process."""


def _makes_a_pool(node: ast.AST) -> bool:
    """A call of ``ThreadPoolExecutor`` (by its name or as ``concurrent.futures``'s)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    return name == "ThreadPoolExecutor"


def pool_errors(modules: dict[str, Module], trees: dict[str, ast.Module]) -> Iterator[str]:
    for name, tree in trees.items():
        package = name.split(".")[1] if "." in name else ""  # services.<package>.…
        if name == THREADS_HOME or package not in LONG_RUNNING:
            continue
        for node in ast.walk(tree):
            if _makes_a_pool(node):
                yield (
                    f"{modules[name].path}:{node.lineno}: ThreadPoolExecutor starts its threads "
                    "as a backlog first needs them and keeps them; make the pool with "
                    "services/shared/threads.py started_pool"
                )


def kind_of(mod: Module) -> str | None:
    """The task kind whose own package holds ``mod`` (``arvo`` for
    ``services.green.kinds.arvo.crash``); None for the seam beside the kinds and the rest."""
    parts = mod.name.split(".")
    if mod.name.startswith(KINDS_PACKAGE + ".") and (
        len(parts) > 4 or mod.path.name == "__init__.py"
    ):
        return parts[3]
    return None


def top_level_errors(root: Path) -> Iterator[str]:
    """One line per file of ``services/green/`` itself that is not in GREEN_TOP_LEVEL."""
    green = root / "services" / "green"
    for path in sorted(green.glob("*.py")):
        if path.name not in GREEN_TOP_LEVEL:
            yield (
                f"{path.relative_to(root).as_posix()}: a flat module beside green's folders: put "
                "it in the folder of its job (edge/, tasks/, ledger/, assessments/, store/, "
                "kinds/, a face), or name it in GREEN_TOP_LEVEL"
            )


def kind_errors(modules: dict[str, Module]) -> Iterator[str]:
    for mod in modules.values():
        if mod.name == KIND_REGISTRY:
            continue
        own = kind_of(mod)
        named: dict[str, list[str]] = {}
        for target in sorted(mod.imports):
            kind = kind_of(modules[target])
            if kind is not None and kind != own:
                named.setdefault(kind, []).append(target)
        for kind, targets in sorted(named.items()):
            yield (
                f"{mod.path}: imports {targets[-1]}, the {kind} kind's own module: reach a kind "
                "through its protocol (services/green/kinds/base.py, datasets.py, errors.py)"
            )


_ARVO_ID_RE = re.compile(rf"\b{ARVO_ID}\b")
_TEXT = {tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
"""Tokens of text: strings (and, from Python 3.12, the parts of f-strings)."""


def arvo_id_errors(root: Path, modules: dict[str, Module]) -> Iterator[str]:
    for mod in modules.values():
        rel = mod.path.as_posix()
        if (
            mod.name == ARVO_ID_HOME
            or mod.name.startswith(ARVO_ID_HOME + ".")
            or "/migrations/versions/" in rel
            or rel in ARVO_ID_ALLOWED
        ):
            continue
        text = (root / mod.path).read_text(encoding="utf-8")
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            named = tok.type == tokenize.NAME and tok.string == ARVO_ID
            if named or (tok.type in _TEXT and _ARVO_ID_RE.search(tok.string)):
                yield (
                    f"{rel}:{tok.start[0]}: names {ARVO_ID} outside the ARVO kind: a task is a "
                    "TaskRef, the id within its kind is ref_id (or add the deprecated alias's "
                    "file to ARVO_ID_ALLOWED)"
                )
                break  # one line per file is enough to find the rest


HISTORY_PHRASES: dict[str, re.Pattern[str]] = {
    "used to": re.compile(
        r"(?<!\bis )(?<!\bare )(?<!\bbe )(?<!\bwas )(?<!\bwere )\bused to\b", re.I
    ),
    "before, / before:": re.compile(
        r"(?:^|[(\[.;:\u2014\u2013]\s*[*_]*\s*)before[,:]", re.I | re.M
    ),
    "previously": re.compile(r"\bpreviously\b", re.I),
    "formerly": re.compile(r"\bformerly\b", re.I),
    "was changed": re.compile(r"\b(?:was|were|has been|have been) changed\b", re.I),
    "the previous release": re.compile(r"\bprevious (?:release|version)\b", re.I),
    "the stop before": re.compile(r"\b(?:the stop before|earlier stops?|the code before)\b", re.I),
}
"""Phrases that narrate a change instead of stating what is. "no longer" is left out: docs use
it for states ("a task that is no longer live")."""

_CODE = re.compile(r"^```.*?^```|`[^`]*`", re.S | re.M)


def history_errors(root: Path) -> Iterator[str]:
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    for page in pages:
        if not page.is_file():
            continue
        text = page.read_text(encoding="utf-8")
        prose = _CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)
        for name, pattern in HISTORY_PHRASES.items():
            for m in pattern.finditer(prose):
                line = prose.count("\n", 0, m.start()) + 1
                yield (
                    f"{page.relative_to(root).as_posix()}:{line}: '{name}' narrates history; "
                    "say what is and why (history lives in commit messages)"
                )


def check(root: Path) -> list[str]:
    modules, trees = load(root)
    return [
        *direction_errors(modules),
        *reach_errors(modules),
        *circle_errors(modules, trees),
        *top_level_errors(root),
        *kind_errors(modules),
        *arvo_id_errors(root, modules),
        *size_errors(modules, trees),
        *docstring_errors(modules, trees),
        *wait_for_errors(modules, trees),
        *tls_errors(modules, trees),
        *pool_errors(modules, trees),
        *history_errors(root),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args(argv)
    errors = check(args.root)
    for line in errors:
        print(line)
    if errors:
        print(f"layout: {len(errors)} rule(s) broken", file=sys.stderr)
        return 1
    count = sum(1 for _ in (args.root / "services").rglob("*.py"))
    print(f"layout: {count} modules keep the import directions and the size limits")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

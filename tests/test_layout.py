"""scripts/check_layout.py: each rule fails on a tree that breaks it, and the repository keeps them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("check_layout", ROOT / "scripts" / "check_layout.py")
assert _spec and _spec.loader
check_layout = importlib.util.module_from_spec(_spec)
sys.modules["check_layout"] = check_layout
_spec.loader.exec_module(check_layout)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / "services" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for pkg in {p.split("/")[0] for p in files}:
        (tmp_path / "services" / pkg / "__init__.py").touch()
    (tmp_path / "services" / "__init__.py").touch()
    return tmp_path


DOC = '"""Does one thing."""\n'


def test_a_clean_tree_passes(tmp_path):
    root = _tree(
        tmp_path,
        {
            "shared/text.py": DOC,
            "sandbox/base.py": DOC + "from services.shared import text\n",
            "green/app.py": DOC + "from services.sandbox.base import x\nfrom . import kinds\n",
            "green/kinds/__init__.py": DOC,
        },
    )
    assert check_layout.check(root) == []


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {"shared/a.py": DOC + "import services.green.app\n", "green/app.py": DOC},
            "services.shared must not import services.green.app",
        ),
        (
            {"sandbox/a.py": DOC + "from services.green import app\n", "green/app.py": DOC},
            "services.sandbox must not import services.green.app",
        ),
        (
            {
                "arena/a.py": DOC + "def f():\n    from services.purple.b import c\n",
                "purple/b.py": DOC,
            },
            "services.arena must not import services.purple.b",
        ),
        (
            {"purple/a.py": DOC + "from ..green.app import x\n", "green/app.py": DOC},
            "services.purple must not import services.green.app",
        ),
        (
            {"green/a.py": DOC + "from services.purple import b\n", "purple/b.py": DOC},
            "services.green must not import services.purple.b",
        ),
    ],
)
def test_a_wrong_direction_fails(tmp_path, files, expected):
    errors = check_layout.check(_tree(tmp_path, files))
    assert any(expected in e for e in errors), errors


def test_green_reaching_purple_through_the_harness_fails(tmp_path):
    root = _tree(
        tmp_path,
        {
            "green/tasks/kind.py": DOC + "from services.swebench import runner\n",
            "swebench/runner.py": DOC + "from services.purple import agent\n",
            "swebench/judge.py": DOC,
            "purple/agent.py": DOC,
        },
    )
    errors = check_layout.check(root)
    assert any(
        "services.green reaches services.purple: services.green.tasks.kind -> services.swebench.runner"
        in e
        for e in errors
    ), errors
    (root / "services/green/tasks/kind.py").write_text(
        DOC + "from services.swebench import judge\n"
    )
    assert check_layout.check(root) == []


def test_sizes_and_docstrings_fail(tmp_path):
    long_function = "def f():\n" + "    x = 1\n" * 80
    root = _tree(
        tmp_path,
        {
            "green/tasks/big.py": DOC + "x = 1\n" * 500,
            "green/tasks/long.py": DOC + long_function,
            "green/tasks/nodoc.py": "x = 1\n",
            "green/tasks/ok.py": DOC + "def g():\n" + "    x = 1\n" * 79,
        },
    )
    errors = check_layout.check(root)
    assert any(e.startswith("services/green/tasks/big.py: 501 lines") for e in errors), errors
    assert any("function f has 81 lines" in e for e in errors), errors
    assert any(
        e.startswith("services/green/tasks/nodoc.py: no module docstring") for e in errors
    ), errors
    assert not any("ok.py" in e for e in errors)


def test_asyncio_wait_for_fails(tmp_path):
    root = _tree(
        tmp_path,
        {
            "green/tasks/poll.py": DOC + "import asyncio\nasync def f(e):\n"
            "    await asyncio.wait_for(e.wait(), 1)\n",
            "green/tasks/imported.py": DOC + "from asyncio import sleep, wait_for\n",
            "green/tasks/fine.py": DOC + "import asyncio\nasync def f(e):\n"
            "    async with asyncio.timeout(1):\n        await e.wait()\n",
        },
    )
    errors = check_layout.check(root)
    assert any(e.startswith("services/green/tasks/poll.py:4: asyncio.wait_for") for e in errors), (
        errors
    )
    assert any(e.startswith("services/green/tasks/imported.py:2: asyncio.wait_for") for e in errors)
    assert not any("fine.py" in e for e in errors)


def test_an_http_client_made_outside_the_shared_module_fails(tmp_path):
    root = _tree(
        tmp_path,
        {
            "green/tasks/peer.py": DOC
            + "import httpx\nc = httpx.AsyncClient(timeout=3, verify=True)\n",
            "green/tasks/poll.py": DOC + "import httpx\nr = httpx.get('http://x')\n",
            "purple/model.py": DOC + "import openai\nc = openai.AsyncOpenAI(api_key='k')\n",
            "purple/given.py": DOC + "import openai\nc = openai.AsyncOpenAI(http_client=None)\n",
            "green/tasks/fine.py": DOC
            + "import httpx\nfrom services.shared.http import async_client\n"
            "c = async_client(timeout=3)\nt = httpx.Timeout(3)\n",
            "shared/http.py": DOC + "import httpx\nc = httpx.Client()\n",
        },
    )
    errors = check_layout.check(root)
    assert any(e.startswith("services/green/tasks/peer.py:3: httpx.AsyncClient") for e in errors), (
        errors
    )
    assert any(e.startswith("services/green/tasks/poll.py:3: httpx.get") for e in errors), errors
    assert any(
        e.startswith("services/purple/model.py:3: openai.AsyncOpenAI without http_client=")
        for e in errors
    ), errors
    flagged = {e.split(":")[0] for e in errors}
    assert flagged == {
        "services/green/tasks/peer.py",
        "services/green/tasks/poll.py",
        "services/purple/model.py",
    }, errors


def test_a_thread_pool_made_outside_the_shared_module_fails_in_a_service(tmp_path):
    pool = "from concurrent.futures import ThreadPoolExecutor\npool = ThreadPoolExecutor(4)\n"
    root = _tree(
        tmp_path,
        {
            "green/tasks/io.py": DOC + pool,
            "sandbox/engine.py": DOC + "import concurrent.futures\n"
            "pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)\n",
            "green/tasks/fine.py": DOC + "from services.shared.threads import started_pool\n"
            "pool = started_pool(4, 'io')\n",
            "shared/threads.py": DOC + pool,
            "arena/cli.py": DOC + pool,  # a CLI's pool lives as long as its command
        },
    )
    errors = check_layout.check(root)
    assert {e.split(": ")[0] for e in errors} == {
        "services/green/tasks/io.py:3",
        "services/sandbox/engine.py:3",
    }, errors
    assert all("started_pool" in e for e in errors)


def test_a_flat_module_beside_greens_folders_fails(tmp_path):
    """Green's own folder keeps the package, its entry point, the app and the settings; a new
    module there fails, the same module in a folder passes."""
    root = _tree(
        tmp_path,
        {
            "green/__main__.py": DOC,
            "green/app.py": DOC,
            "green/config.py": DOC,
            "green/tasks/run.py": DOC,
            "green/helpers.py": DOC,
        },
    )
    assert check_layout.check(root) == [
        "services/green/helpers.py: a flat module beside green's folders: put it in the folder "
        "of its job (edge/, tasks/, ledger/, assessments/, store/, kinds/, a face), or name it "
        "in GREEN_TOP_LEVEL"
    ]
    (root / "services/green/helpers.py").rename(root / "services/green/tasks/helpers.py")
    assert check_layout.check(root) == []


def test_an_unknown_package_is_reported(tmp_path):
    errors = check_layout.check(_tree(tmp_path, {"extra/a.py": DOC}))
    assert any("services.extra has no row in ALLOWED" in e for e in errors)


def test_the_repository_keeps_the_rules():
    assert check_layout.check(ROOT) == []


def test_only_a_kind_itself_and_the_registry_import_its_own_modules(tmp_path):
    root = _tree(
        tmp_path,
        {
            "green/kinds/__init__.py": DOC,
            "green/kinds/base.py": DOC,
            "green/kinds/arvo/__init__.py": DOC,
            "green/kinds/arvo/crash.py": DOC,
            "green/kinds/arvo/kind.py": DOC + "from . import crash\nfrom ..base import x\n",
            "green/kinds/registry.py": DOC + "from services.green.kinds.arvo import kind\n",
            "green/kinds/needle/__init__.py": DOC + "from services.green.kinds.arvo import crash\n",
            "green/app.py": DOC + "from services.green.kinds import base\n",
            "green/ui/facts.py": DOC + "from services.green.kinds.arvo.crash import parse\n",
            "green/ui/runs.py": DOC + "def f():\n    from services.green.kinds import arvo\n",
        },
    )
    errors = check_layout.check(root)
    assert sorted(e.split(":")[0] for e in errors) == [
        "services/green/kinds/needle/__init__.py",  # another kind's modules: no either
        "services/green/ui/facts.py",
        "services/green/ui/runs.py",
    ], errors
    assert "imports services.green.kinds.arvo.crash, the arvo kind's own module" in errors[1]


def test_arvo_id_is_named_only_in_the_arvo_kind_past_migrations_and_the_allow_list(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(
        check_layout, "ARVO_ID_ALLOWED", frozenset({"services/green/tasks/alias.py"})
    )
    root = _tree(
        tmp_path,
        {
            "arena/results.py": DOC + "def f(o):\n    return o.arvo_id\n",
            "arena/batch.py": DOC + 'REF = f"arvo:{x}"\nKEY = "arvo_id"\n',
            "shared/outcome.py": DOC + "def f(arvo_id):\n    pass\n",
            "shared/fine.py": DOC + "mask_arvo_id = 1  # arvo_id in a comment is no use of it\n",
            "green/kinds/arvo/kind.py": DOC + "arvo_id = 1\n",
            "green/store/migrations/versions/0001_init.py": DOC + "arvo_id = 1\n",
            "green/tasks/alias.py": DOC + "arvo_id = 1\n",
        },
    )
    errors = check_layout.check(root)
    assert sorted(e.split(":")[0:2] for e in errors) == [
        ["services/arena/batch.py", "3"],
        ["services/arena/results.py", "3"],
        ["services/shared/outcome.py", "2"],
    ], errors
    assert all("names arvo_id outside the ARVO kind" in e for e in errors)


def test_the_tests_make_no_one_shot_httpx_call():
    """A one-shot ``httpx.get`` builds a client that parses the root certificates (42 ms of
    CPU), and the tests poll with them: tests/support/web.py is the same call on the shared
    context."""
    import ast

    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            what = check_layout._builds_its_own_tls(node)
            if what and what.split(".")[1] in check_layout.HTTPX_ONE_SHOT:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {what}")
    assert found == [], found


def test_an_import_circle_fails_however_its_imports_are_hidden(tmp_path):
    """A circle is refused whether its imports are at the top, under TYPE_CHECKING or inside a
    function; the message names the loop."""
    hidden = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
    root = _tree(
        tmp_path,
        {
            "green/tasks/run.py": DOC + "from services.green.tasks.orch import Orchestrator\n",
            "green/tasks/orch.py": DOC
            + hidden
            + "    from services.green.tasks.audit import audit\n",
            "green/tasks/audit.py": DOC
            + "def audit():\n    from services.green.tasks import run\n",
            "purple/commands.py": DOC + hidden + "    from services.purple.protocols import S\n",
            "purple/protocols.py": DOC + "from .commands import CommandLog\n",
        },
    )
    errors = check_layout.check(root)
    assert any(
        e.startswith("services/green/tasks/audit.py: import circle services.green.tasks.audit -> ")
        and "services.green.tasks.run -> services.green.tasks.orch -> services.green.tasks.audit:"
        in e
        for e in errors
    ), errors
    assert any(
        e.startswith(
            "services/purple/commands.py: import circle services.purple.commands -> "
            "services.purple.protocols -> services.purple.commands:"
        )
        for e in errors
    ), errors
    assert len(errors) == 2, errors


def test_a_circle_opened_by_a_protocol_at_the_seam_passes(tmp_path):
    """The runner takes a Protocol of what it uses; the orchestrator, which satisfies it,
    imports the runner: one way. A package's ``__init__`` importing its modules, which import
    their siblings through the package (``from pkg import sibling``), is no circle either."""
    root = _tree(
        tmp_path,
        {
            "green/tasks/runtime.py": DOC
            + "from typing import Protocol\nclass Runtime(Protocol): ...\n",
            "green/tasks/run.py": DOC + "from services.green.tasks.runtime import Runtime\n",
            "green/tasks/orch.py": DOC + "from services.green.tasks.run import TaskRun\n",
            "green/ui/__init__.py": DOC + "from services.green.ui import runs\n",
            "green/ui/runs.py": DOC + "from services.green.ui import plots\n",
            "green/ui/plots.py": DOC,
        },
    )
    assert check_layout.check(root) == []


@pytest.mark.parametrize(
    ("importer", "imported"),
    [("shared", "sandbox"), ("shared", "purple"), ("sandbox", "purple"), ("sandbox", "swebench")],
)
def test_an_arrow_running_back_up_the_packages_fails(tmp_path, importer, imported):
    """shared <- sandbox <- green and shared <- purple: nothing lower imports what stands on it."""
    root = _tree(
        tmp_path,
        {
            f"{importer}/low.py": DOC + f"from services.{imported} import high\n",
            f"{imported}/high.py": DOC,
        },
    )
    errors = check_layout.check(root)
    assert (
        f"services/{importer}/low.py: services.{importer} must not import services.{imported}.high"
        in errors
    ), errors


@pytest.mark.parametrize(
    ("sentence", "name"),
    [
        ("The cache used to be shared.", "used to"),
        ("It answers in 5 ms (before, 50 ms).", "before, / before:"),
        ("It answers in 5 ms. **Before:** 50 ms.", "before, / before:"),
        ("Before, the queue was a list.", "before, / before:"),
        ("The limit was previously 4.", "previously"),
        ("Green, formerly one process, has replicas.", "formerly"),
        ("The default was changed to 8.", "was changed"),
        ("The previous release scored 0.75.", "the previous release"),
        ("Alternating with the code before: 0.15.", "the stop before"),
    ],
)
def test_history_in_the_docs_fails(tmp_path, sentence, name):
    (tmp_path / "services").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(f"# A page\n\n{sentence}\n")
    errors = check_layout.check(tmp_path)
    assert errors == [
        f"docs/page.md:3: '{name}' narrates history; say what is and why "
        "(history lives in commit messages)"
    ], errors


def test_what_is_and_code_pass_the_history_rule(tmp_path):
    """States, the word "before" in its ordinary senses, and quoted code or tool output pass."""
    (tmp_path / "services").mkdir()
    (tmp_path / "README.md").write_text(
        "A token is used to sign the cookie; a task that is no longer live is swept.\n"
        "Spans cover 3 lines before, 1 after; it waits before it reads.\n"
        "ASan prints `previously allocated by thread`.\n\n"
        "```text\nformerly: this line is output, used to show a block\n```\n"
    )
    assert check_layout.check(tmp_path) == []

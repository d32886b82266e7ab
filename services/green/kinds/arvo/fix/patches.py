"""A fix task's patch: taken out of the agent's container by green, and what a fix may not change.

At ``submit`` green reads the agent's source tree through the engine (a tar the engine makes:
no tool, configuration or file of the agent's container decides what it holds) and diffs it
against the pristine tree of ``repo-vul.tar.gz`` in its own process (:mod:`.tree_diff`). The
diff is checked whole: a patch that changes tests, the fuzz harness or the build scripts is
refused with a sentence naming the file (the agent may put it back and submit again), and so is
one that changes binary files or links, or adds code that changes how the sanitizer or the
process runs (:mod:`.constructs`). The judge applies exactly that diff to the pristine tree of a
fresh container, with green's own applier (:mod:`..builds.patching`).

Where the image has ``git``, the tree the agent edits is also given a one-commit repository of
the pristine tree, for the agent's own ``git diff``; green never reads it.
"""

from __future__ import annotations

import asyncio
import posixpath
import re
import shlex
import tempfile
from pathlib import Path

from services.green.kinds.arvo.fix.constructs import refused_constructs
from services.green.kinds.arvo.fix.tree_diff import TreeDiff, diff_trees
from services.green.kinds.arvo.scoring.gt_model import is_test_path
from services.sandbox.base import Sandbox

MAX_PATCH_BYTES = 4 << 20
"""The largest patch green takes out of a fix task's container."""
BUILD_FILES = frozenset(
    {"makefile", "gnumakefile", "cmakelists.txt", "meson.build", "meson_options.txt",
     "configure", "configure.ac", "configure.in", "build.sh", "build", "build.bazel",
     "workspace", "sconstruct", "sconscript", "android.bp", "android.mk", "autogen.sh",
     "bootstrap", "project.json", "dockerfile"}
)  # fmt: skip
BUILD_SUFFIXES = (".mk", ".am", ".in", ".cmake", ".gyp", ".gypi", ".bzl", ".m4", ".pro", ".mak")
_TEST_NAME = re.compile(r"(^test_|_tests?\.[^.]+$|_unittest\.[^.]+$|^tests?\.[^.]+$)", re.I)
_IDENTITY = (
    "-c user.name=arena -c user.email=arena@localhost -c commit.gpgsign=false "
    "-c core.hooksPath=/dev/null"
)


def baseline_script(project_dir: str) -> str:
    """Bash that makes the pristine tree a one-commit repository for the agent's own use
    (``git diff`` shows its edit), where the image has ``git``; nothing where it has none."""
    d = shlex.quote(project_dir)
    return (
        f"command -v git >/dev/null || exit 0; cd {d} && rm -rf .git && git init -q && "
        f"git {_IDENTITY} add -A -f . && "
        f"git {_IDENTITY} commit -q --no-verify -m 'the vulnerable tree' && git rev-parse HEAD"
    )


async def take_patch(
    sandbox: Sandbox, project_dir: str, pristine: Path, pristine_top: str, max_bytes: int
) -> TreeDiff:
    """The agent's edit of ``project_dir`` against the pristine archive (its project under
    ``pristine_top``), computed by green. Raises UnreadableFile when the tree is larger than
    ``max_bytes`` or no directory (the engine failing raises SandboxError)."""
    with tempfile.TemporaryDirectory(prefix="arena-fix-") as tmp:
        tree = Path(tmp) / "tree.tar"
        with tree.open("wb") as out:
            await sandbox.read_tree(project_dir, out, max_bytes)
        top = posixpath.basename(project_dir.rstrip("/"))
        return await asyncio.to_thread(diff_trees, pristine, pristine_top, tree, top)


def what_it_is(path: str, harness: str | None) -> str | None:
    """Why a fix may not change ``path`` (None: it may)."""
    name = path.rsplit("/", 1)[-1]
    low = name.lower()
    if path == harness or "fuzz" in low or any("fuzz" in p.lower() for p in path.split("/")[:-1]):
        return "the fuzz harness"
    if is_test_path(path) or _TEST_NAME.search(name):
        return "a test"
    if low in BUILD_FILES or low.endswith(BUILD_SUFFIXES):
        return "a build script"
    return None


def patch_problems(taken: TreeDiff, harness: str | None, fix_patch: str | None) -> list[str]:
    """Why the agent's edit is refused (empty: it is not). ``harness``: the fuzz harness's path
    in the project (from the crash report), refused wherever it lies; ``fix_patch``: the
    developers' fix (a construct it adds is allowed)."""
    problems = [
        f"the patch changes {p}, {kind}: a fix changes the project's code only "
        f"(put it back as it was in the pristine tree)"
        for p in taken.files + taken.binary + taken.odd
        if (kind := what_it_is(p, harness))
    ]
    if taken.binary:
        problems.append(
            "the patch changes binary files (" + ", ".join(taken.binary[:5]) + "): a fix "
            "changes source code (remove them, or put them back as they were)"
        )
    if taken.odd:
        problems.append(
            "the tree has links or special files that are not as in the pristine tree ("
            + ", ".join(taken.odd[:5])
            + "): a fix changes source code (remove them, or put them back as they were)"
        )
    size = len(taken.patch.encode())
    if size > MAX_PATCH_BYTES:
        problems.append(
            f"the patch is {size:,} bytes, more than {MAX_PATCH_BYTES:,}: a fix is a small "
            "change (remove generated files from the tree)"
        )
    return problems + refused_constructs(taken.patch, fix_patch)

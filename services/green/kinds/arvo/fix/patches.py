"""A fix task's patch: taken out of the agent's container, and what a fix may not change.

At preparation the source tree the agent edits gets a one-commit git baseline of the pristine,
vulnerable tree (no history: nothing of the fix is reachable). At ``submit`` green takes the
agent's edit out as ``git diff --binary`` against it (build products excluded) and checks it:
a patch that changes tests, the fuzz harness or the build scripts is refused with a sentence
naming the file (the agent may put it back and submit again), and so is one that changes
binary files. The judge applies it to the pristine tree of a fresh container.
"""

from __future__ import annotations

import re
import shlex

from services.green.kinds.arvo.scoring.gt_model import is_test_path
from services.sandbox.base import Sandbox
from services.swebench.judge import patch_files

PATCH_FILE = "/tmp/arena-fix.patch"
MAX_PATCH_BYTES = 4 << 20
"""The largest patch green takes out of a fix task's container."""
BUILD_PRODUCTS = ("*.o", "*.a", "*.so", "*.so.*", "*.lo", "*.la", "*.d", "*.gcno", "*.gcda",
                  "*.pyc", ".deps", ".libs", "CMakeFiles", "CMakeCache.txt")  # fmt: skip
"""Left out of the patch: what building the project in the container writes into its tree."""
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
    """Bash that makes the pristine tree a one-commit repository (``git diff`` then shows the
    agent's edit), with no hooks and a fixed identity."""
    d = shlex.quote(project_dir)
    return (
        f"cd {d} && rm -rf .git && git init -q && git {_IDENTITY} add -A -f . && "
        f"git {_IDENTITY} commit -q --no-verify -m 'the vulnerable tree' && git rev-parse HEAD"
    )


class NoPatch(ValueError):
    """The agent's tree gives no diff: its git baseline is gone or broken (the agent's doing)."""


async def take_patch(sandbox: Sandbox, project_dir: str) -> str:
    """The agent's edit of ``project_dir`` as a binary-safe diff against the baseline (new
    files included, build products left out). Raises UnreadableFile when it is too large,
    NoPatch when git cannot diff the tree (the engine failing raises SandboxError)."""
    excludes = " ".join(shlex.quote(f":(exclude,glob)**/{p}") for p in BUILD_PRODUCTS)
    script = (
        f"cd {shlex.quote(project_dir)} && git -c core.fileMode=false add -A -- . {excludes} "
        f"&& git -c core.fileMode=false diff --cached --binary HEAD -- . > {PATCH_FILE}"
    )
    result = await sandbox.exec(script, 120)
    if result.exit_code != 0:
        tail = result.output.strip().splitlines()[-1:] or ["no output"]
        raise NoPatch(
            f"git cannot diff {project_dir} against its baseline (exit {result.exit_code}: "
            f"{tail[0][:200]}); restore its .git folder, or the tree, and submit again"
        )
    data = await sandbox.read_file(PATCH_FILE, max_bytes=MAX_PATCH_BYTES)
    return data.decode("utf-8", errors="replace")


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


def patch_problems(patch: str, harness: str | None) -> list[str]:
    """Why ``patch`` is refused (empty: it is not). ``harness``: the fuzz harness's path in
    the project (from the crash report), refused wherever it lies."""
    if not patch.strip():
        return []
    paths = patch_files(patch)
    if not paths:
        return ["the patch cannot be read as a git diff"]
    problems = [
        f"the patch changes {p}, {kind}: a fix changes the project's code only "
        f"(put it back with: git checkout -- {shlex.quote(p)})"
        for p in paths
        if (kind := what_it_is(p, harness))
    ]
    binary = _binary(patch)
    if binary:
        problems.append(
            "the patch changes binary files (" + ", ".join(binary[:5]) + "): a fix changes "
            "source code (remove them, or put them back with git checkout)"
        )
    return problems


def _binary(patch: str) -> list[str]:
    out = []
    for m in re.finditer(r"^diff --git a/(\S+) b/\S+\n(?:(?!diff --git ).*\n)*?GIT binary patch",
                         patch, re.M):  # fmt: skip
        out.append(m.group(1))
    return out

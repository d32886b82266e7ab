"""Green's own reading of a fix: the agent's tree (a tar, as the engine makes one) diffed against
the pristine archive in green's process, the diff parsed with unidiff and applied by green's
applier, and the refusal of code that changes how the sanitizer or the process runs."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from services.green.kinds.arvo.builds.patching import NotApplied, parse, patched_content
from services.green.kinds.arvo.fix.constructs import refused_constructs
from services.green.kinds.arvo.fix.patches import patch_problems
from services.green.kinds.arvo.fix.tree_diff import TreeDiff, diff_trees

PRISTINE = {
    "src/a.c": b"int a(void)\n{\n    return 1;\n}\n",
    "src/b.c": b"int b(void) { return 2; }",  # no newline at its end
    "src/old.c": b"int old;\n",
    "Makefile": b"all:\n\tcc -c src/a.c\n",
    "data/logo.bin": b"\x00\x01\x02",
}


def tar_of(top: str, files: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buf.getvalue()


def taken(tmp_path: Path, agent: dict[str, bytes], links: dict[str, str] | None = None) -> TreeDiff:
    pristine = tmp_path / "repo-vul.tar"
    pristine.write_bytes(tar_of("src-vul/proj", PRISTINE))
    tree = tmp_path / "tree.tar"
    tree.write_bytes(tar_of("proj", agent, links))
    return diff_trees(pristine, "src-vul/proj", tree, "proj")


def apply_all(patch: str, tree: dict[str, bytes]) -> dict[str, bytes]:
    out = dict(tree)
    for pf in parse(patch):
        path = pf.path
        content = patched_content(pf, out[path].decode() if path in out else None)
        if content is None:
            out.pop(path)
        else:
            out[path] = content
    return out


def test_the_diff_is_greens_and_applies_back_to_the_agents_tree(tmp_path):
    agent = {
        **PRISTINE,
        "src/a.c": b"int a(void)\n{\n    if (x) return 0;\n    return 1;\n}\n",
        "src/b.c": b"int b(void) { return 3; }",
        "src/new.c": b"int n;\n",
        "src/a.o": b"\x7fELF build product",
        ".git/config": b"[diff]\n\texternal = /tmp/x\n",
    }
    del agent["src/old.c"]
    d = taken(tmp_path, agent)
    assert d.files == ["src/a.c", "src/b.c", "src/new.c", "src/old.c"]
    assert d.binary == [] and d.odd == []
    assert "\\ No newline at end of file" in d.patch and "+++ /dev/null" in d.patch
    expected = {k: v for k, v in agent.items() if not k.endswith(".o") and ".git" not in k}
    assert apply_all(d.patch, PRISTINE) == expected


def test_binary_files_and_links_are_listed_for_refusal(tmp_path):
    agent = {**PRISTINE, "data/logo.bin": b"\x00\x09"}
    d = taken(tmp_path, agent, links={"src/evil.c": "/etc/passwd"})
    assert d.binary == ["data/logo.bin"] and d.odd == ["src/evil.c"]
    problems = patch_problems(d, None, None)
    assert any("binary files (data/logo.bin)" in p for p in problems)
    assert any("links or special files" in p and "src/evil.c" in p for p in problems)


def test_a_changed_build_script_is_named_whatever_git_would_have_printed(tmp_path):
    """The agent's .git/config chose the diff git printed (diff.external): green never runs
    git, so the Makefile it changed is what the record and the refusal name."""
    agent = {**PRISTINE, "Makefile": b"override CFLAGS += -fno-sanitize=address\n"}
    agent[".git/config"] = b"[diff]\n\texternal = /workspace/ctx-diff.sh\n"
    d = taken(tmp_path, agent)
    assert d.files == ["Makefile"]
    assert "the patch changes Makefile, a build script" in patch_problems(d, None, None)[0]


def test_a_hunk_whose_context_is_not_in_the_file_is_not_applied():
    patch = "diff --git a/x.c b/x.c\n--- a/x.c\n+++ b/x.c\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    [pf] = parse(patch)
    with pytest.raises(NotApplied, match="does not match"):
        patched_content(pf, "q\nb\n")
    assert patched_content(pf, "z\na\nb\n") == b"z\na\nc\n"  # moved: found where it is


def test_a_context_diff_is_no_patch_green_applies():
    context = "*** a/Makefile\n--- b/src/x.c\n***************\n*** 1 ****\n! a\n--- 1 ----\n! b\n"
    with pytest.raises(NotApplied):
        parse(context)


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("__attribute__((constructor)) static void f(void) { if (!getuid()) _exit(0); }",
         "a constructor or destructor attribute"),
        ('const char *__asan_default_options(void) { return "report_globals=0"; }',
         "a sanitizer interface name"),
        ('__attribute__((no_sanitize("address")))', "a no_sanitize attribute"),
        ('#pragma clang attribute push (__attribute__((no_sanitize("address"))), apply_to=function)',
         "a #pragma or _Pragma"),
        ('__attribute__((section(".init_array"))) void *p = f;', "a section attribute"),
        ("void __asan_on_error(void) { _exit(0); }", "a sanitizer interface name"),
        ("#define N(a, b) a##b", "token pasting"),
        ('asm volatile("" ::: "memory");', "inline assembly"),
        ("    if (getenv(\"X\")) _exit(0);", "an exit of the process"),
    ],
)  # fmt: skip
def test_constructs_that_change_the_sanitizer_are_refused_by_name(line, named):
    patch = f"diff --git a/src/x.c b/src/x.c\n--- a/src/x.c\n+++ b/src/x.c\n@@ -1 +1,2 @@\n a\n+{line}\n"
    [problem] = [p for p in refused_constructs(patch, None) if named in p] or [""]
    assert named in problem and "src/x.c:2" in problem, refused_constructs(patch, None)
    assert not [p for p in refused_constructs(patch, patch) if named in p]  # the fix needs it


def test_a_plain_fix_adds_no_refused_construct():
    patch = (
        "diff --git a/src/x.c b/src/x.c\n--- a/src/x.c\n+++ b/src/x.c\n@@ -1 +1,3 @@\n a\n"
        "+    if (len > sizeof buf) /* the section header's size */\n+        return -1;\n"
    )
    assert refused_constructs(patch, None) == []

"""The agent's workspace in an ARVO task container, for every ARVO kind (locate, reproduce, fix).

``/workspace/<files>`` (the report, a description), ``/workspace/src-vul/<project>/…`` (the
vulnerable source, streamed from ``repo-vul.tar.gz``) and ``/workspace/shared/`` (where the
answer goes); then the hardening: ``.git`` history removed (the fix commit may be reachable from
it), ``/tmp/poc`` removed (the task's crashing input). Nothing of the ground truth (patch.diff,
the PoC) is ever copied in, but for a locate condition that grants the PoC file
(:mod:`.conditions`), which also withdraws what its condition does not grant (:func:`withdraw`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from services.sandbox.base import Sandbox

WORKSPACE = "/workspace"
SOURCE_DIR = f"{WORKSPACE}/src-vul"


async def populate_workspace(
    sandbox: Sandbox,
    files: Mapping[str, bytes],
    archive: Path | None,
    archive_top: str,
    *,
    strip_git: bool,
    hide_poc: bool,
) -> None:
    """Copy ``files`` (names relative to ``/workspace``) and the source archive in, through the
    sandbox API, then harden the container as root (:meth:`Sandbox.setup`: before the agent's
    first command, never in its session). ``archive`` None: no source tree."""
    await sandbox.put_files(WORKSPACE, {**files, "shared/.keep": b""})
    top = archive_top.strip("/")
    dest = WORKSPACE if top == "src-vul" or top.startswith("src-vul/") else SOURCE_DIR
    if archive is not None:
        with archive.open("rb") as stream:  # streamed, not loaded
            await sandbox.put_archive(dest, stream)
    hardening = [f"rm -f {WORKSPACE}/shared/.keep"]
    if strip_git:
        hardening.append(f"rm -rf {SOURCE_DIR}/*/.git /src/*/.git")
    if hide_poc:
        hardening.append("rm -f /tmp/poc")
    result = await sandbox.setup(" ; ".join(hardening), 60)  # as root: /src, /tmp/poc
    if result.exit_code != 0:
        raise RuntimeError(f"workspace set-up failed: {result.output[-500:]}")


def project_dir(project: str | None) -> str:
    """The project's source tree in the container: ``/workspace/src-vul/<project>``."""
    return f"{SOURCE_DIR}/{project}" if project else SOURCE_DIR


async def withdraw(sandbox: Sandbox, *, source: bool, reproducer: bool) -> None:
    """Take out of the image, as root before the agent's first command, what a condition does
    not grant: the source (every tree under ``/src``: the project's and what it builds with)
    and the reproducer (the fuzz targets in ``/out`` and ``arvo``: the agent never runs the
    PoC itself)."""
    steps = []
    if source:
        steps.append("find /src -mindepth 1 -maxdepth 1 -exec rm -rf {} +")
    if reproducer:
        steps.append("rm -rf /out /bin/arvo /usr/bin/arvo /usr/local/bin/arvo")
    if not steps:
        return
    result = await sandbox.setup(" && ".join(steps), 300)
    if result.exit_code != 0:
        raise RuntimeError(f"workspace set-up failed: {result.output[-500:]}")

"""How commands reach the project's Python in a SWE-bench image.

Official images keep the interpreter in a conda env (``testbed``) that every command must
activate; the local fixtures use the system Python and need nothing. Each sandbox command is a
fresh ``bash -c``, so activation is a prefix of every command: ``auto`` looks for conda once per
container, ``""`` (or ``none``) uses none, anything else is used as given.
"""

from __future__ import annotations

from services.sandbox.base import Sandbox

CONDA_ACTIVATE = "source /opt/miniconda3/bin/activate testbed"
"""What official SWE-bench images need before running the project's Python."""

_DETECT = (
    "if [ -f /opt/miniconda3/bin/activate ] && [ -d /opt/miniconda3/envs/testbed ]; "
    "then echo conda; else echo none; fi"
)


async def detect_activate(sandbox: Sandbox, timeout: float = 30.0) -> str:
    """:data:`CONDA_ACTIVATE` when the image has the SWE-bench conda env, else ``""``."""
    result = await sandbox.exec(_DETECT, timeout)
    return CONDA_ACTIVATE if result.output.strip().endswith("conda") else ""


async def resolve_activate(sandbox: Sandbox, setting: str | None) -> str:
    """The activation prefix for a setting: ``auto`` (detect), ``""``/``none``/None, or a
    command."""
    if setting is None or setting.strip().lower() in ("", "none"):
        return ""
    if setting.strip().lower() == "auto":
        return await detect_activate(sandbox)
    return setting.strip()


def with_activate(command: str, activate: str) -> str:
    """``command`` preceded by the (quiet) activation, on its own line."""
    return f"{activate} >/dev/null 2>&1\n{command}" if activate else command

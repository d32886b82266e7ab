"""A green and a purple wired to each other in this process, on the bundled fixtures, for the
benchmarks that time or trace the whole command path (bench_green_exec.py, trace_command.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fixtures.catalog import DEFAULT_ASSETS_DIR, IMAGE_TEMPLATE
from services.green.app import create_app as create_green
from services.green.config import GreenSettings
from services.purple.app import create_app as create_purple
from services.purple.config import PurpleSettings
from tests.support.servers import free_port


def green_and_purple(tmp: Path, policy: Any, token: str, **green: Any) -> tuple[Any, int, Any, int]:
    """(purple app, its port, green app, its port): purple runs ``policy`` for every task; green
    (its settings overridden by ``green``) hands its tasks to that purple."""
    purple_port, green_port = free_port(), free_port()
    purple = create_purple(
        PurpleSettings(port=purple_port, log_dir=tmp / "logs", trajectory_dir=tmp / "traj"),
        make_policy=lambda kind="rca_task": policy,
    )
    settings = GreenSettings(
        port=green_port,
        asset_source=str(DEFAULT_ASSETS_DIR),
        asset_cache_dir=tmp / "cache",
        image_template=IMAGE_TEMPLATE,
        database_url=f"sqlite:///{tmp}/g.db",
        log_dir=tmp / "logs",
        purple_url=f"http://127.0.0.1:{purple_port}",
        api_token=token,
        api_token_file=tmp / "operator-token",
        idle_timeout_s=5,
        **green,
    )
    return purple, purple_port, create_green(settings), green_port

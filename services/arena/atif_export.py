"""A run's trajectories as ATIF v1.8 files: ``trajectory.atif.json`` beside each task's
``trajectory.json`` (``arena run`` writes it as it saves the trajectory), and ``arena export RUN
--format atif``, which writes one file per task of a finished run, from the trajectories the run
saved (no green needed). The conversion is :func:`services.shared.atif.to_atif`'s.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from services.arena import options as opt
from services.arena.results import RESULTS_FILE, RunResults, write_task_file
from services.shared.atif import atif_json
from services.shared.trajectory import TrajectoryView

TRAJECTORY_FILE = "trajectory.json"
ATIF_FILE = "trajectory.atif.json"
ATIF_MAX_BYTES = 256 * 1024**2
"""The largest saved trajectory converted (purple's own view of a long run is a few MiB)."""


def write_atif(trajectory: Path, dest: Path) -> str | None:
    """Convert the saved ``trajectory`` to ATIF into ``dest``: None when written, else a note
    saying why not."""
    try:
        size = trajectory.stat().st_size
        if size > ATIF_MAX_BYTES:
            return f"ATIF not written: {trajectory.name} is larger than {ATIF_MAX_BYTES:,} bytes"
        view = TrajectoryView.model_validate_json(trajectory.read_bytes())
        write_task_file(dest, atif_json(view))
    except OSError as exc:
        return f"ATIF not written: {type(exc).__name__}: {exc}"
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "its root"
        return f"ATIF not written: {trajectory.name} is not a trajectory ({where}: {first['msg']})"
    except (ValueError, TypeError) as exc:
        return f"ATIF not written: {type(exc).__name__}: {str(exc)[:300]}"
    return None


def export_run(results: RunResults, run_dir: Path, out: Path) -> tuple[list[Path], dict[str, str]]:
    """One ATIF file per attempt of the run whose trajectory was saved, as
    ``<out>/<task folder>.atif.json``: (the files written, label -> why none for the others)."""
    written: list[Path] = []
    missing: dict[str, str] = {}
    for outcome in results.tasks:
        if not outcome.dir:
            missing[outcome.label] = "the run saved no folder for it"
            continue
        source = run_dir / outcome.dir / TRAJECTORY_FILE
        if not source.is_file():
            missing[outcome.label] = next(
                (n for n in outcome.notes if n.startswith("trajectory not saved")),
                f"no {TRAJECTORY_FILE} in {outcome.dir}",
            )
            continue
        dest = out / f"{Path(outcome.dir).name}.atif.json"
        why = write_atif(source, dest)
        if why is None:
            written.append(dest)
        else:
            missing[outcome.label] = why
    return written, missing


class ExportFormat(StrEnum):
    atif = "atif"


def export_command(
    run_dir: opt.RunDir,
    format: Annotated[
        ExportFormat,
        typer.Option("--format", help="What to write: atif (ATIF v1.8, one file per task)."),
    ] = ExportFormat.atif,
    out: Annotated[
        Path | None,
        typer.Option(help="Folder for the files (default: the run's atif/ folder)."),
    ] = None,
) -> None:
    """Write the trajectory of every task of a run as ATIF v1.8: ``<out>/<task folder>.atif.json``,
    from the trajectory.json files the run saved (green is not asked). A task without one is
    listed with the reason; exit 1 when none could be written."""
    console = Console(highlight=False)
    run_dir = run_dir.parent if run_dir.is_file() else run_dir
    try:
        results = RunResults.load(run_dir / RESULTS_FILE)
    except (OSError, ValueError) as exc:
        console.print(f"[red]error:[/] cannot read {run_dir / RESULTS_FILE}: {escape(str(exc))}")
        raise typer.Exit(2) from exc
    target = out or run_dir / format.value
    written, missing = export_run(results, run_dir, target)
    for label, why in missing.items():
        console.print(f"  not exported: {escape(label)}: {escape(why)}", soft_wrap=True)
    console.print(f"{len(written)} {format.value.upper()} file(s) in {target}")
    if not written and results.tasks:
        raise typer.Exit(1)

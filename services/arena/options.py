"""The options of ``arena run`` (typer annotations), kept apart so the command reads short."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

Ids = Annotated[
    list[str] | None,
    typer.Argument(
        help="Task references: arvo:10055 (or 10055), swebench:<instance id>... (space or "
        "comma separated).",
        show_default=False,
    ),
]
IdsFile = Annotated[
    Path | None,
    typer.Option(
        "--ids-file",
        exists=True,
        dir_okay=False,
        readable=True,
        help="File of task references (whitespace/comma separated, '#' comments).",
    ),
]
SplitName = Annotated[
    str | None,
    typer.Option(
        "--split",
        show_default=False,
        help="A named split kept with the client, read as a split file (arena split lists "
        "them; flbench-900: FLBench's 900 tasks).",
    ),
]
Green = Annotated[str, typer.Option(envvar="ARENA_GREEN_URL", help="Green's base URL.")]
Purple = Annotated[
    str | None,
    typer.Option(
        help="Purple's A2A URL, sent to green with each task (default: green's configured "
        "purple). Green reaches it; this CLI never does."
    ),
]
PurpleApi = Annotated[
    str | None,
    typer.Option(
        "--purple-api",
        hidden=True,
        help="Deprecated and ignored: trajectories come through green.",
    ),
]
RunName = Annotated[
    str | None,
    typer.Option("--run", help="Run name: the folder under --out (default: run-<timestamp>)."),
]
Out = Annotated[Path, typer.Option(help="Results folder.")]
Concurrency = Annotated[int, typer.Option(min=1, help="Tasks in flight at once.")]
MaxSteps = Annotated[
    int | None, typer.Option(min=1, help="Command limit per task (default: green's).")
]
TaskTimeout = Annotated[
    float | None, typer.Option(min=1, help="Deadline per task in seconds (default: green's).")
]
CommandTimeout = Annotated[
    float | None, typer.Option(min=1, help="Timeout per command in seconds (default: green's).")
]
Resume = Annotated[
    bool,
    typer.Option(
        "--resume/--no-resume",
        help="Continue an existing run: keep completed ids, run the "
        "others. --no-resume starts the run over.",
    ),
]
RetryFailed = Annotated[
    bool, typer.Option("--retry-failed", help="On resume, run failed ids again too.")
]
PollInterval = Annotated[float, typer.Option(min=0.01, help="Seconds between polls of a task.")]
GreenGrace = Annotated[
    float,
    typer.Option(
        min=0, help="Seconds green may be unreachable mid-run before the run stops (exit 2)."
    ),
]
CompleteWait = Annotated[
    float,
    typer.Option(
        min=0,
        help="Seconds the run waits at its end for the records green withholds while other "
        "tasks of their bugs are unfinished (another run's, say); 0: not at all. What is still "
        "withheld is listed in report.md; arena report fetches it later.",
    ),
]
ApiToken = Annotated[
    str | None,
    typer.Option(
        envvar="ARENA_API_TOKEN",
        show_default=False,
        help="Green's operator token (never saved). Default: GREEN_API_TOKEN, else the file "
        "GREEN_API_TOKEN_FILE, data/operator-token or data/compose/operator-token.",
    ),
]
Sample = Annotated[
    int | None,
    typer.Option(
        "--sample",
        min=1,
        help="Run N ids drawn with --seed (from the ids given, "
        "else from every id green's source lists).",
    ),
]
Seed = Annotated[int, typer.Option(help="Seed of --sample.")]
VerifiedOnly = Annotated[
    bool, typer.Option("--verified-only", help="Leave out ids not verified on green.")
]
RunDir = Annotated[
    Path, typer.Argument(help="A run folder (results/<run>) or its results.json.", exists=True)
]
Trials = Annotated[
    int,
    typer.Option(
        min=1,
        max=100,
        help="Independent attempts per id, each its own green task with its trial index "
        "(reports give pass@k and pass^k for k = 1..K).",
    ),
]
ReportGreen = Annotated[
    str | None,
    typer.Option(
        "--green",
        envvar="ARENA_GREEN_URL",
        help="Green to fetch the records it withheld from (default: the run's green).",
        show_default=False,
    ),
]
Offline = Annotated[
    bool, typer.Option("--offline", help="Do not ask green for withheld records: the files only.")
]
RunDirs = Annotated[
    list[Path], typer.Argument(help="Two or more run folders (results/<run>).", exists=True)
]
Force = Annotated[
    bool,
    typer.Option(
        "--force", help="Compare even when a task's scoring rule or image digest differs."
    ),
]
ReportForce = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Report even when the trials of a task were scored with different scoring rules "
        "or image digests.",
    ),
]

"""``arena-swebench`` (``python -m services.swebench``): run the agent on SWE-bench instances
(``run``) and judge the predictions locally (``evaluate``).

LLM settings default to purple's (``PURPLE_MODEL``, ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
``PURPLE_MODE``... see services/purple/config.py); options override them.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from services.purple.agent.config import AgentConfig
from services.purple.config import PurpleSettings
from services.purple.llm.openai_chat import OpenAIChatModel, OpenAIModelConfig
from services.shared.files import write_json_atomic
from services.shared.logging import configure_logging
from services.swebench.instances import (
    DatasetUnavailable,
    SweInstance,
    image_name,
    load_instances,
)
from services.swebench.judge import EvalReport, evaluate
from services.swebench.predictions import load_predictions
from services.swebench.runner import InstanceResult, RunConfig, run_batch

app = typer.Typer(
    name="swebench",
    help="SWE-bench mode: the ReAct agent fixes issues and writes preds.json; a local judge.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

LABEL_PREFIX = "swebench"
"""Label prefix of the containers made here (never reaped by green, nor green's by us)."""

InstancesOpt = Annotated[
    str,
    typer.Option(
        "--instances",
        "-i",
        help="A .json/.jsonl file of instances, 'verified', 'lite', 'full' or a Hugging Face "
        "dataset name (needs the `datasets` package).",
    ),
]
IdsOpt = Annotated[
    list[str] | None,
    typer.Option("--id", help="Instance id to keep (repeat, or comma-separated)."),
]
FilterOpt = Annotated[str | None, typer.Option("--filter", help="Regex over instance ids.")]
SliceOpt = Annotated[str | None, typer.Option("--slice", help="Python slice, e.g. 0:10.")]
SplitOpt = Annotated[str, typer.Option(help="Dataset split (Hugging Face only).")]
TemplateOpt = Annotated[
    str | None,
    typer.Option(
        help="Image per instance; {id} is the docker-compatible id "
        "(default: the instance's image_name, else swebench/sweb.eval.x86_64.{id}:latest)."
    ),
]
ActivateOpt = Annotated[
    str,
    typer.Option(
        help="Before each command: auto (conda env testbed when present), none, or a command."
    ),
]


def _ids(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def _load(
    source: str, split: str, ids: list[str] | None, filter_re: str | None, slice_spec: str | None
) -> list[SweInstance]:
    try:
        return load_instances(
            source, split=split, ids=_ids(ids), filter_re=filter_re, slice_spec=slice_spec
        )
    except (DatasetUnavailable, KeyError, ValueError) as exc:
        raise typer.BadParameter(str(exc).strip("'\""), param_hint="--instances") from None


def _provider() -> Any:
    from services.sandbox.docker import DockerSandboxProvider

    try:
        return DockerSandboxProvider(label_prefix=LABEL_PREFIX)
    except Exception as exc:  # docker.errors.DockerException: no engine
        typer.secho(f"error: no Docker engine: {exc}", fg="red", err=True)
        raise typer.Exit(2) from None


# ---- run --------------------------------------------------------------------------------------


@dataclass
class Row:
    state: str = "queued"
    status: str = ""
    steps: int = 0
    cost: float = 0.0
    patch_lines: int = 0
    started: float | None = None
    ended: float | None = None


@dataclass
class RunView:
    """The live table: one row per instance in flight or done, and totals."""

    total: int
    rows: dict[str, Row] = field(default_factory=dict)
    max_rows: int = 30

    def update(self, instance_id: str, **fields: Any) -> None:
        row = self.rows.setdefault(instance_id, Row())
        for key, value in fields.items():
            setattr(row, key, value)
        if fields.get("state") == "starting":
            row.started = time.monotonic()
        if fields.get("state") in ("done", "failed"):
            row.ended = time.monotonic()

    def __rich__(self) -> Group:
        states = [r.state for r in self.rows.values()]
        done = sum(s in ("done", "failed", "skipped") for s in states)
        cost = sum(r.cost for r in self.rows.values())
        head = (
            f"[bold]{done}/{self.total}[/] finished · {states.count('skipped')} skipped · "
            f"{sum(s in ('starting', 'running', 'extracting') for s in states)} running · "
            f"{states.count('failed')} failed · ${cost:.4f}"
        )
        table = Table(expand=False, show_edge=False)
        for col in ("instance", "state", "steps", "cost", "time", "patch"):
            table.add_column(
                col, justify="right" if col in ("steps", "cost", "time", "patch") else "left"
            )
        style = {"running": "cyan", "done": "green", "failed": "red", "skipped": "dim"}
        active = [(k, r) for k, r in self.rows.items() if r.state not in ("queued", "skipped")]
        now = time.monotonic()
        for iid, r in active[-self.max_rows :]:
            secs = ((r.ended or now) - r.started) if r.started else 0.0
            state = r.state if not r.status else f"{r.state} ({r.status})"
            table.add_row(
                escape(iid),
                f"[{style.get(r.state, 'white')}]{escape(state)}[/]",
                str(r.steps),
                f"{r.cost:.4f}",
                f"{secs:.0f}s",
                f"{r.patch_lines}" if r.state in ("done", "failed") else "",
            )
        return Group(head, table)


@app.command()
def run(
    instances: InstancesOpt,
    output: Annotated[Path, typer.Option("--output", "-o", help="Output folder.")] = Path(
        "swebench_runs/default"
    ),
    split: SplitOpt = "test",
    ids: IdsOpt = None,
    filter_re: FilterOpt = None,
    slice_spec: SliceOpt = None,
    model: Annotated[str | None, typer.Option(help="Model (default: PURPLE_MODEL).")] = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint (default: OPENAI_BASE_URL).")
    ] = None,
    api_key: Annotated[
        str | None, typer.Option(help="API key (default: OPENAI_API_KEY).", show_default=False)
    ] = None,
    mode: Annotated[
        str | None, typer.Option(help="tool_calls or text (default: PURPLE_MODE).")
    ] = None,
    step_limit: Annotated[int, typer.Option(min=0, help="Most LLM calls per instance.")] = 100,
    cost_limit: Annotated[float, typer.Option(min=0, help="Most dollars per instance.")] = 3.0,
    wall_time: Annotated[float, typer.Option(min=0, help="Most seconds per instance.")] = 3600.0,
    command_timeout: Annotated[float, typer.Option(min=1, help="Seconds per command.")] = 300.0,
    command_limit: Annotated[
        int | None, typer.Option(min=2, help="Most commands per instance.")
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="Instances run at once.")] = 1,
    image_template: TemplateOpt = None,
    activate: ActivateOpt = "auto",
    model_name: Annotated[
        str | None, typer.Option(help="model_name_or_path in preds.json (default: the model).")
    ] = None,
    hints: Annotated[bool, typer.Option(help="Show the dataset's hints to the agent.")] = False,
    redo: Annotated[
        bool, typer.Option(help="Run instances already in preds.json again (default: skip).")
    ] = False,
) -> None:
    """Run the agent on instances; writes OUTPUT/preds.json, results.json, trajectories/."""
    selected = _load(instances, split, ids, filter_re, slice_spec)
    settings = PurpleSettings()
    chosen_mode = mode or settings.mode
    if chosen_mode not in ("tool_calls", "text"):
        raise typer.BadParameter("must be tool_calls or text", param_hint="--mode")
    llm = _llm(settings, model, base_url, api_key)
    agent_config = AgentConfig(
        mode=chosen_mode,
        step_limit=step_limit,
        cost_limit=cost_limit,
        wall_time_limit_s=wall_time,
        command_timeout_s=command_timeout,
        context_budget_tokens=settings.context_budget_tokens,
    )
    config = RunConfig(
        output_dir=output,
        model_name_or_path=model_name or "",
        image_template=image_template,
        activate=activate,
        workers=workers,
        command_timeout_s=command_timeout,
        command_limit=command_limit,
        include_hints=hints,
        redo=redo,
    )
    configure_logging(output / "logs", echo=False)
    console = Console()
    console.print(
        f"{len(selected)} instance(s) · model {escape(llm.name)} · {workers} worker(s) · "
        f"output {escape(str(output))}"
    )
    results = _run_live(console, selected, llm, agent_config, config)
    _print_run_summary(console, results, output)


def _llm(
    settings: PurpleSettings, model: str | None, base_url: str | None, api_key: str | None
) -> OpenAIChatModel:
    """The model client: the options given, purple's settings for the rest."""
    return OpenAIChatModel(
        OpenAIModelConfig(
            model=model or settings.model,
            base_url=base_url or settings.openai_base_url,
            api_key=api_key or settings.openai_api_key,
            timeout_s=settings.llm_timeout_s,
            max_retries=settings.llm_retries,
            prices=settings.prices,
        )
    )


def _run_live(
    console: Console,
    selected: list[SweInstance],
    llm: OpenAIChatModel,
    agent_config: AgentConfig,
    config: RunConfig,
) -> list[InstanceResult]:
    """The batch under the live view."""
    view = RunView(total=len(selected))
    provider = _provider()
    with Live(view, console=console, refresh_per_second=4, transient=False):
        return asyncio.run(
            run_batch(
                selected,
                llm=llm,
                agent_config=agent_config,
                config=config,
                provider=provider,
                observer=view.update,
            )
        )


def _print_run_summary(console: Console, results: list[InstanceResult], output: Path) -> None:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    parts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    cost = sum(r.cost for r in results)
    console.print()
    for r in results:
        if r.status in ("error", "infra_error"):  # no prediction: a resume retries them
            console.print(f"[red]{escape(r.instance_id)}[/]: {r.status}: {escape(r.reason[:200])}")
    console.print(
        f"done: {parts or 'nothing to do'} · ${cost:.4f} · {escape(str(output / 'preds.json'))}"
    )


# ---- evaluate ---------------------------------------------------------------------------------


@app.command("evaluate")
def evaluate_cmd(
    predictions: Annotated[Path, typer.Argument(help="preds.json (or .jsonl) to judge.")],
    instances: InstancesOpt,
    split: SplitOpt = "test",
    ids: IdsOpt = None,
    image_template: TemplateOpt = None,
    activate: ActivateOpt = "auto",
    workers: Annotated[int, typer.Option(min=1, help="Evaluations at once.")] = 2,
    timeout: Annotated[float, typer.Option(min=1, help="Seconds for the tests.")] = 1800.0,
    report: Annotated[
        Path | None, typer.Option(help="Report JSON (default: <predictions>.eval.json).")
    ] = None,
) -> None:
    """Judge predictions in fresh containers: apply the patch, run FAIL_TO_PASS and
    PASS_TO_PASS with pytest. For real SWE-bench, use the official harness."""
    preds = load_predictions(predictions)
    wanted = _ids(ids) or list(preds)
    pool = {i.instance_id: i for i in _load(instances, split, None, None, None)}
    unknown = [i for i in wanted if i not in pool]
    if unknown:
        raise typer.BadParameter(f"not in the instances: {', '.join(unknown)}", param_hint="--id")
    provider = _provider()
    console = Console()
    reports: dict[str, EvalReport] = {}

    def judge(iid: str) -> EvalReport:
        inst = pool[iid]
        patch = preds.get(iid, {}).get("model_patch", "")
        return asyncio.run(
            evaluate(
                provider,
                inst,
                image_name(inst, image_template),
                patch,
                activate=activate,
                timeout=timeout,
            )
        )

    with (
        console.status(f"evaluating {len(wanted)} prediction(s)..."),
        ThreadPoolExecutor(max_workers=workers) as executor,
    ):
        futures = {executor.submit(judge, iid): iid for iid in wanted}
        for future in as_completed(futures):
            reports[futures[future]] = future.result()
    ordered = [reports[i] for i in wanted]
    console.print(eval_table(ordered))
    resolved = sum(r.resolved for r in ordered)
    console.print(f"resolved {resolved}/{len(ordered)}")
    out = report or predictions.with_name(predictions.stem + ".eval.json")
    write_json_atomic(
        out,
        {
            "resolved": resolved,
            "total": len(ordered),
            "resolved_ids": [r.instance_id for r in ordered if r.resolved],
            "reports": {r.instance_id: r.model_dump(mode="json") for r in ordered},
        },
    )
    console.print(f"report: {out}")


def eval_table(reports: list[EvalReport]) -> Table:
    table = Table(show_edge=False)
    for col in ("instance", "applied", "FAIL_TO_PASS", "PASS_TO_PASS", "resolved", "time"):
        table.add_column(col)

    def frac(statuses: dict[str, str]) -> str:
        passed = sum(s == "PASSED" for s in statuses.values())
        return f"{passed}/{len(statuses)}" if statuses else "-"

    for r in reports:
        verdict = "[green]yes[/]" if r.resolved else "[red]no[/]"
        if r.error:
            verdict += f" [dim]({escape(r.error[:60])})[/]"
        table.add_row(
            escape(r.instance_id),
            "yes" if r.patch_applied else "[red]no[/]",
            frac(r.fail_to_pass),
            frac(r.pass_to_pass),
            verdict,
            f"{r.duration_s:.1f}s",
        )
    return table


def main() -> None:
    app()

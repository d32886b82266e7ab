"""A running task's agent plane as MCP tools: what each tool takes, what its description tells
the agent (the task's rules and limits), and the :class:`LiveTasks` request each one is.

``run_bash`` is A2A's ``execute``; ``read_file`` and ``search_code`` are commands built here and
run through that same path (recorded, bounded and counted as the commands they are); ``run_poc``
(where the task offers it) is A2A's ``run_poc``; ``submit`` writes the kind's answer with one
command where the kind takes one in a file (locate: the locations and reasoning as loc.json;
reproduce: the input's bytes) and then is A2A's ``submit``. Nothing here runs anything itself.
"""

from __future__ import annotations

import base64
import binascii
import shlex
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from pydantic import BaseModel, Field, ValidationError

from services.green.config import GreenSettings
from services.green.tasks.agent_plane import Refused, answer
from services.green.tasks.live_task import RUN_POC, LiveTask, LiveTasks
from services.shared.loc import MAX_LOCATIONS, Location, LocJson
from services.shared.protocol import Submit, SubmitResult, result_text, submit_result_text

READ_MAX_LINES = 400
"""The most lines one ``read_file`` shows."""
SEARCH_MAX_MATCHES = 200
"""The most matches one ``search_code`` prints."""
SCORED_LOCATIONS = 5


class RunBash(BaseModel):
    command: str = Field(min_length=1, description="The bash command line.")
    timeout: float | None = Field(
        None, gt=0, description="Seconds before it is stopped (at most the task's limit)."
    )


class ReadFile(BaseModel):
    path: str = Field(min_length=1, description="The file (absolute, or relative to the cwd).")
    start_line: int = Field(1, ge=1, description="First line to show (1-based).")
    end_line: int | None = Field(None, ge=1, description="Last line to show (inclusive).")


class SearchCode(BaseModel):
    pattern: str = Field(min_length=1, description="An extended regular expression (grep -E).")
    path: str = Field("", description="File or folder to search (default: the source tree).")
    glob: str = Field("", description="Only files whose name matches, e.g. '*.c'.")


class NoArguments(BaseModel):
    pass


class LocateAnswer(BaseModel):
    locations: list[Location] | None = Field(
        None,
        max_length=MAX_LOCATIONS,
        description="The root cause's code locations, most likely first. Omit both fields to "
        "submit the answer file as it stands.",
    )
    reasoning: str = Field("", description="Why these locations are the root cause.")


class ReproduceAnswer(BaseModel):
    input_base64: str | None = Field(None, description="The input's bytes, base64-encoded.")
    input_text: str | None = Field(None, description="The input as UTF-8 text (instead).")


@dataclass(frozen=True)
class Tool:
    name: str
    arguments: type[BaseModel]
    description: str
    run: Callable[[Any], Awaitable[Any]]
    """The request (an awaitable of a CommandResult or SubmitResult) for the checked arguments;
    a str is an answer given without one (arguments that cannot be written)."""


class TaskTools:
    """The tools of one running task, for the holder of its token."""

    def __init__(
        self, tasks: LiveTasks, live: LiveTask, token: str, settings: GreenSettings
    ) -> None:
        self.tasks, self.live, self.token, self.settings = tasks, live, token, settings
        self.kind = live.kind.assignment.model_fields["kind"].default
        self.paths = live.plan.paths if live.plan is not None else None
        self.tools = {t.name: t for t in self._tools()}

    def listed(self) -> list[types.Tool]:
        return [
            types.Tool(
                name=t.name, description=t.description, input_schema=t.arguments.model_json_schema()
            )
            for t in self.tools.values()
        ]

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        tool = self.tools.get(name)
        if tool is None:
            return _error(f"no tool {name!r}; this task's tools: {', '.join(self.tools)}")
        try:
            args = tool.arguments.model_validate(arguments)
        except ValidationError as exc:
            return _error(f"invalid arguments for {name}: {_problems(exc)}")
        request = await tool.run(args)
        if isinstance(request, str):
            return _error(request)
        reply = await answer(self.tasks, self.live.id, request)
        if isinstance(reply, Refused):
            return _error(f"Refused: {reply.why}")
        if isinstance(reply, SubmitResult):
            return _text(submit_result_text(reply), error=not reply.accepted)
        return _text(result_text(reply))

    # ---- the requests ----------------------------------------------------------------------

    def _execute(self, command: str, timeout: float | None = None) -> Awaitable[Any]:
        return self.tasks.execute(self.live.id, self.token, command, timeout)

    async def _run_bash(self, args: RunBash) -> Awaitable[Any]:
        return self._execute(args.command, args.timeout)

    async def _read_file(self, args: ReadFile) -> Awaitable[Any] | str:
        last = args.start_line + READ_MAX_LINES - 1
        end = min(args.end_line or last, last)
        if end < args.start_line:
            return f"end_line {end} is before start_line {args.start_line}"
        path = shlex.quote(args.path)
        command = f"sed -n '{args.start_line},{end}p' -- {path} | nl -ba -v {args.start_line}"
        return self._execute(
            f"if [ -f {path} ]; then {command}; else echo 'no such file: '{path}; false; fi"
        )

    async def _search_code(self, args: SearchCode) -> Awaitable[Any]:
        where = args.path or (self.paths.source_dir if self.paths else "") or "."
        include = f" --include={shlex.quote(args.glob)}" if args.glob else ""
        return self._execute(
            f"grep -rnE{include} -e {shlex.quote(args.pattern)} -- {shlex.quote(where)}"
            f" | head -n {SEARCH_MAX_MATCHES}"
        )

    async def _run_poc(self, _: NoArguments) -> Awaitable[Any]:
        return self.tasks.run_poc(self.live.id, self.token)

    async def _submit(self, data: bytes | None) -> Awaitable[Any] | str:
        """Write ``data`` to the answer file (one command), then submit."""
        if data is not None:
            assert self.paths is not None
            encoded = base64.b64encode(data).decode()
            written = await answer(
                self.tasks,
                self.live.id,
                self._execute(
                    f"printf %s {encoded} | base64 -d > {shlex.quote(self.paths.submission)}"
                ),
            )
            if isinstance(written, Refused):
                return f"Refused: {written.why}"
            if written.exit_code != 0:
                return f"the answer could not be written:\n{written.output}"
        return self.tasks.submit(self.live.id, self.token, Submit(token=self.token))

    async def _submit_locations(self, args: LocateAnswer) -> Awaitable[Any] | str:
        if args.locations is None:
            return await self._submit(None)
        try:
            loc = LocJson(reasoning=args.reasoning, locations=args.locations)
        except ValidationError as exc:
            return f"the answer was not written: {_problems(exc)}"
        return await self._submit(loc.model_dump_json(indent=1).encode())

    async def _submit_input(self, args: ReproduceAnswer) -> Awaitable[Any] | str:
        if args.input_base64 is not None and args.input_text is not None:
            return "give input_base64 or input_text, not both"
        data = None
        if args.input_text is not None:
            data = args.input_text.encode()
        elif args.input_base64 is not None:
            try:
                data = base64.b64decode(args.input_base64, validate=True)
            except (binascii.Error, ValueError):
                return "input_base64 is not valid base64"
        return await self._submit(data)

    async def _submit_tree(self, _: NoArguments) -> Awaitable[Any] | str:
        return await self._submit(None)

    # ---- what the agent reads ----------------------------------------------------------------

    def _tools(self) -> list[Tool]:
        poc = RUN_POC in getattr(self.live.plan, "offers", ())
        tools = [
            Tool("run_bash", RunBash, self._rules(), self._run_bash),
            Tool(
                "read_file",
                ReadFile,
                f"Show up to {READ_MAX_LINES} lines of a file with their numbers. It runs as one "
                "command of this task (sed and nl) and counts as one.",
                self._read_file,
            ),
            Tool(
                "search_code",
                SearchCode,
                f"Search files for an extended regular expression (grep -rnE), at most "
                f"{SEARCH_MAX_MATCHES} matches as file:line:text. It runs as one command of this "
                "task and counts as one.",
                self._search_code,
            ),
        ]
        if poc:
            tools.append(
                Tool(
                    "run_poc",
                    NoArguments,
                    "Run the vulnerable fuzz target on the task's crashing input, in a fresh "
                    "container of the arena's own, and return its exit status and output (the "
                    "sanitizer report). It counts as one command.",
                    self._run_poc,
                )
            )
        tools.append(self._submit_tool())
        return tools

    def _rules(self) -> str:
        live, s = self.live, self.settings
        left = max(0, int(live.deadline - time.monotonic()))
        workdir = live.plan.workdir if live.plan is not None else "/"
        return (
            f"Run one bash command in the task's container (working directory {workdir}, no "
            "network, an unprivileged user) and return its exit code and output. One command at a "
            "time: a call while another of this task runs is refused. This task allows "
            f"{live.max_steps} commands ({live.commands} used; read_file, search_code, run_poc "
            f"and writing an answer with submit count too), each stopped after "
            f"{live.command_timeout_s:g} s with everything it started; output over "
            f"{s.output_limit_bytes:,} bytes is cut in the middle; a command is at most "
            f"{s.command_max_bytes:,} bytes. The task ends in about {left} s."
        )

    def _submit_tool(self) -> Tool:
        ends = " An accepted answer ends the task; a refused one comes back with its errors."
        path = self.paths.submission if self.paths is not None else ""
        if self.kind == "rca_task":
            return Tool(
                "submit",
                LocateAnswer,
                "Submit your root-cause localization: the code locations (file relative to the "
                "project root, function, line_start, line_end, description), most likely first, "
                f"and your reasoning. They are written to {path} (one command) and judged; only "
                f"the first {SCORED_LOCATIONS} locations are scored, and a location scores at "
                "line level when its span (at most 50 lines) holds a line the fix changes." + ends,
                self._submit_locations,
            )
        if self.kind == "poc_task" and path:
            return Tool(
                "submit",
                ReproduceAnswer,
                f"Submit your input: its bytes (input_base64) or text (input_text) are written to "
                f"{path} (one command) and judged; with neither, {path} as it stands." + ends,
                self._submit_input,
            )
        tree = self.paths.source_dir if self.paths is not None and self.paths.source_dir else ""
        return Tool(
            "submit",
            NoArguments,
            f"Submit your edit: the changes you made to the tree {tree or 'of the task'} are "
            "taken and judged (no arguments)." + ends,
            self._submit_tree,
        )


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
    )


def _text(text: str, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


def _error(text: str) -> types.CallToolResult:
    return _text(text, error=True)

"""The stack-trace analyst: a deterministic, LLM-free policy and the honest baseline to beat.

It reads the sanitizer report through the environment, ranks project frames by a fixed recipe,
looks each candidate up in the source tree (does the file exist; which function encloses the
line), and submits up to five tight spans through the same ``submit_localization`` path as the
agent. Three commands in the usual case: list the tree + read the report, outline the candidate
files, write loc.json (four for spatial bugs, see below).

Ranking: the crash site first (for a double free: the first free, see :meth:`rank`); then, by
bug class, the free site and the allocation site (use-after-free, double-free), the allocation
site's caller where the size was computed (overflows), the overflowed stack object or global,
MSan's origin; callers of the crash site fill the remaining places.

Spatial bugs (buffer overflows, out-of-bounds indexes) get one more command: the code of the
crash stack's frames is read and the out-of-bounds index/length is followed up the stack while
it is a parameter (:mod:`.dataflow`). When a caller produced it (a local, a constant, a struct
member, a call result), that frame leads, followed by the crash site and the rest as above; the
trail is written into loc.json's reasoning either way.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass, replace
from pathlib import Path

from services.purple.agent.errors import Submitted
from services.purple.agent.trajectory import Trajectory
from services.purple.analyst.cfunc import (
    FunctionSpan,
    awk_outline,
    enclosing_function,
    parse_numbered,
    tight_span,
)
from services.purple.analyst.dataflow import (
    Trail,
    awk_frame,
    follow,
    frame_code,
    memory_function,
)
from services.purple.analyst.frames import (
    harness_frames,
    is_harness_boundary,
    is_project_frame,
    is_runtime_frame,
    is_system_frame,
    project_frames,
    split_src_path,
)
from services.purple.analyst.sanitizer import Frame, SanitizerReport, parse_report
from services.purple.environment import (
    CommandRecord,
    RunResult,
    RunStats,
    TaskContext,
    TaskEnded,
)
from services.purple.tools.rca import RcaTools
from services.shared.commands import CommandResult
from services.shared.loc import Location
from services.shared.logging import get_logger

log = get_logger(__name__)

_MARK = "@@ARVO_ANALYST@@"


@dataclass
class Candidate:
    file: str
    """As written in the report (``/src/<project>/a/b.c``)."""
    line: int
    function: str | None
    role: str


@dataclass
class Resolved:
    candidate: Candidate
    rel_path: str
    """Relative to the project root (the folder under the source dir)."""
    fn: FunctionSpan
    path: str = ""
    """Where the file was found (absolute, in the task environment)."""


@dataclass
class ValueChain:
    """The crash stack's consecutive project frames, crash first, for :mod:`.dataflow`."""

    frames: list[Frame]
    memory_fn: str | None
    """The memory/string function the crash is in (``memcpy``...), when frame #0 is one."""
    more_frames: bool
    """Project frames follow that are not in :attr:`frames` (depth limit, a system frame
    between them); False when the harness is next."""


_SPATIAL = ("buffer-overflow", "buffer-underflow")
_SPATIAL_TYPES = {"container-overflow", "index-out-of-bounds", "negative-size-param"}


class StackTraceAnalyst:
    name = "stack-trace-analyst"

    def __init__(
        self,
        *,
        max_locations: int = 5,
        max_callers: int = 3,
        context_lines: int = 2,
        report_bytes: int = 48_000,
        max_value_frames: int = 5,
        trajectory_dir: str | Path | None = None,
    ) -> None:
        self.max_locations = max_locations
        self.max_value_frames = max_value_frames
        self.max_callers = max_callers
        self.context_lines = context_lines
        self.report_bytes = report_bytes
        self.trajectory_dir = trajectory_dir

    async def run(self, task: TaskContext) -> RunResult:
        start = time.monotonic()
        stats = RunStats()
        traj = Trajectory(self.trajectory_dir, task.task_id, self.name)

        def on_command(record: CommandRecord, result: CommandResult) -> None:
            stats.commands = stats.steps = stats.commands + 1
            traj.event("command", **record.model_dump(), output=result.output)

        tools = RcaTools(
            task.env,
            task.paths,
            command_timeout=task.command_timeout_s,
            on_command=on_command,
            stats=lambda: stats.model_copy(),
        )
        traj.event("start", policy=self.name, task_id=task.task_id, paths=task.paths.model_dump())
        status, reason, submission = "error", "cancelled", None
        try:
            reason = await self._analyse(tools, traj)
        except Submitted as exc:
            status, reason, submission = "submitted", "submission accepted", exc.submission
        except TaskEnded as exc:
            status, reason = "limits", str(exc) or "task ended"
        except Exception as exc:
            log.exception("analyst failed", task_id=task.task_id)
            reason = f"{type(exc).__name__}: {exc}"
        finally:
            result = RunResult(
                task_id=task.task_id,
                policy=self.name,
                status=status,
                reason=reason,
                stats=stats,
                duration_s=time.monotonic() - start,
                submission=submission,
                command_history=tools.history,
                trajectory_path=str(traj.final_path) if traj.final_path else None,
            )
            traj.finish(policy=self.name, settings=self._settings(), result=result.model_dump())
        return result

    async def _analyse(self, tools: RcaTools, traj: Trajectory) -> str:
        """Returns the failure reason; success leaves through :class:`Submitted`."""
        src = tools.paths.source_dir.rstrip("/")
        listing, _, report_text = (
            await tools.execute(
                f"ls -1 {shlex.quote(src)}; echo {_MARK}; "
                + self._read_report_cmd(tools.paths.error_report)
            )
        ).output.partition(_MARK)
        folders = [ln.strip() for ln in listing.splitlines() if ln.strip()]
        report = parse_report(report_text)
        traj.event(
            "report",
            report=report.model_dump(exclude={"stacks"}),
            stacks=[{"kind": s.kind, "frames": len(s.frames)} for s in report.stacks],
        )
        candidates = self.rank(report)
        if not candidates:
            return "no project frame or source location in the report"
        chain = self.value_chain(report)
        keep = {(f.file or "", f.line or 1) for f in chain.frames} if chain else set()
        resolved = await self._resolve(tools, candidates, folders, keep=keep)
        traj.event(
            "candidates",
            ranked=[c.__dict__ for c in candidates],
            resolved=[
                {"file": r.rel_path, "line": r.candidate.line, "fn": r.fn.__dict__}
                for r in resolved
            ],
        )
        trail = None
        if chain is not None:
            try:
                trail = await self._follow_value(tools, report, chain, resolved)
            except TaskEnded:
                raise
            except Exception:  # a lexical heuristic must never cost the submission
                log.exception("value trail failed; ranking from the stack alone")
        if trail is not None:
            traj.event(
                "value_trail",
                origin=trail.origin,
                access=trail.access,
                steps=[step.__dict__ for step in trail.steps],
                why=trail.why,
            )
            resolved = self.promote_origin(resolved, chain, trail)  # type: ignore[arg-type]
        locations = self.locations(resolved)
        if not locations:
            return "none of the candidate files exists in the source tree"
        reasoning = self.reasoning(report, resolved, trail)
        reply = await tools.submit_localization(locations, reasoning)
        if len(locations) > 1:  # refused: retry with the crash site alone
            reply = await tools.submit_localization(locations[:1], reasoning)
        return f"submission refused: {reply}"

    def _read_report_cmd(self, path: str) -> str:
        """Print the report from its first sanitizer line on (skipping any noise before it)."""
        q, n = shlex.quote(path), self.report_bytes
        pattern = shlex.quote(r"==[0-9]+==[ ]*(ERROR|WARNING): |runtime error: ")
        return (
            f"n=$(grep -a -n -m1 -E {pattern} {q} | cut -d: -f1); "
            f'if [ -n "$n" ]; then tail -n +"$n" {q} | head -c {n}; else tail -c {n} {q}; fi'
        )

    # ---- ranking -----------------------------------------------------------------------------

    def rank(self, report: SanitizerReport) -> list[Candidate]:
        """Candidates, best first (duplicates removed; more than needed, as some may not
        resolve to a file in the tree)."""
        crash = project_frames(report.crash_stack)
        freed = project_frames(report.stack("freed"))
        alloc = project_frames(report.stack("allocated"))
        origin = project_frames(report.stack("origin"))
        kind = report.crash_type or "crash"
        what = f"{kind}" + (
            f" ({report.access} of size {report.access_size})"
            if report.access and report.access_size
            else ""
        )

        def cand(frame: Frame, role: str) -> Candidate:
            return Candidate(frame.file or "", frame.line or 1, frame.function_name, role)

        first: list[Candidate] = []
        if crash:
            first.append(cand(crash[0], f"crash site: {what}"))
        elif report.ub_location is not None:
            u = report.ub_location
            first.append(Candidate(u.file, u.line or 1, None, f"crash site: {what}"))
        elif (
            (s := report.summary_location) is not None
            and not is_system_frame(Frame(index=0, file=s.file, function=s.function))
            and not is_runtime_frame(Frame(index=0, file=s.file, function=s.function))
        ):
            first.append(Candidate(s.file, s.line or 1, s.function, f"crash site: {what}"))
        callers = [cand(f, f"caller #{i} of the crash site") for i, f in enumerate(crash[1:], 1)]
        special: list[Candidate] = []
        free_site: Frame | None = None
        if report.is_lifetime_bug:
            # the free site; for a double free the first free often sits where the second one
            # crashed, so prefer the first freeing frame that is not on the crash stack
            on_crash = {(f.file, f.line) for f in crash}
            free_site = next((f for f in freed if (f.file, f.line) not in on_crash), None)
            special += [cand(f, "where the object was freed") for f in freed[:1]]
            if free_site is not None and free_site is not freed[0]:
                special.append(cand(free_site, "the call that freed the object"))
            special += [cand(f, "where the object was allocated") for f in alloc[:1]]
        elif report.is_overflow:
            special += [
                cand(f, "allocation site of the overflowed buffer (its size)") for f in alloc[:1]
            ]
            if report.stack_variable and (obj := project_frames(report.stack("stack_object"))):
                name, line = report.stack_variable
                if line:
                    special.append(
                        Candidate(
                            obj[0].file or "",
                            line,
                            obj[0].function_name,
                            f"declaration of the overflowed stack object '{name}'",
                        )
                    )
            if (g := report.global_variable) is not None and g.line:
                special.append(
                    Candidate(
                        g.file, g.line, None, f"definition of the overflowed global '{g.function}'"
                    )
                )
        elif origin:
            special.append(cand(origin[0], "where the uninitialized value was created"))
        elif leak := project_frames(report.stack("leak")):
            first = first or [cand(leak[0], "allocation of the leaked memory")]
            callers = [
                cand(f, f"caller #{i} of the leaking allocation") for i, f in enumerate(leak[1:], 1)
            ]
        # interleave: crash site, first special, caller 1, second special, caller 2, ...
        if report.crash_type == "double-free" and freed:
            # the second free (the crash) is usually the owner's legitimate release; the fix is
            # at the premature first free, so it leads (its caller when both go through one
            # wrapper, e.g. xmlFreeNode called twice)
            lead = cand(free_site or freed[0], "the first free of the object (premature)")
            first, special = [lead], first + special
        ranked = list(first)
        top_callers = callers[: self.max_callers]
        for i in range(max(len(special), len(top_callers))):
            ranked += special[i : i + 1] + top_callers[i : i + 1]
        ranked += callers[self.max_callers :]
        ranked += [cand(f, "further up the free stack") for f in freed[1:3]]
        ranked += [cand(f, "further up the allocation stack") for f in alloc[1:3]]
        if not ranked:
            ranked = [
                cand(f, "fuzz target (no project frame in the report)")
                for f in harness_frames(report.crash_stack)
            ]
        seen: set[tuple[str, int]] = set()
        out = []
        for c in ranked:
            if c.file and (c.file, c.line) not in seen:
                seen.add((c.file, c.line))
                out.append(c)
        return out

    # ---- looking candidates up in the tree ---------------------------------------------------

    async def _resolve(
        self,
        tools: RcaTools,
        candidates: list[Candidate],
        folders: list[str],
        keep: set[tuple[str, int]] | None = None,
    ) -> list[Resolved]:
        """One command: find each candidate's file in the tree and outline it around the line.
        The first ``2 * max_locations`` candidates are looked up, and those at ``keep``."""
        src = tools.paths.source_dir.rstrip("/")
        parts = []
        for i, c in enumerate(candidates):
            if i >= 2 * self.max_locations and (c.file, c.line) not in (keep or set()):
                continue
            project, rel = split_src_path(c.file)
            tries = [f"{src}/{project}/{rel}"] if project else []
            if c.file.startswith("/") and not project:
                segs = c.file.strip("/").split("/")
                suffixes = ["/".join(segs[k:]) for k in range(1, max(1, len(segs) - 1))]
            else:
                suffixes = [rel]
                tries.append(f"{src}/{rel}")
            tries += [f"{src}/{d}/{s}" for s in suffixes for d in folders]
            quoted = " ".join(shlex.quote(t) for t in dict.fromkeys(tries))
            outline = awk_outline('"$f"', c.line, max_lines=30)
            parts.append(
                f'f=\'\'; for c in {quoted}; do if [ -f "$c" ]; then f="$c"; break; fi; done; '
                f'echo "{_MARK} {i} $f"; if [ -n "$f" ]; then {outline}; fi'
            )
        output = (await tools.execute("( " + "\n".join(parts) + " )")).output
        resolved: list[Resolved] = []
        for block in output.split(_MARK)[1:]:
            head, _, body = block.partition("\n")
            index, _, path = head.strip().partition(" ")
            if not path or not index.isdigit():
                continue
            c = candidates[int(index)]
            rel = path[len(src) + 1 :] if path.startswith(src + "/") else path
            rel = rel.split("/", 1)[1] if "/" in rel else rel  # drop the project folder
            fn = enclosing_function(parse_numbered(body), c.line)
            resolved.append(Resolved(c, rel, fn, path))
        return resolved

    # ---- following the bad value up the stack ------------------------------------------------

    def value_chain(self, report: SanitizerReport) -> ValueChain | None:
        """For a spatial memory error (overflow, out-of-bounds index): the crash stack's first
        run of consecutive project frames, which :mod:`.dataflow` follows the bad index/length
        through. None for other bug classes or when fewer than two frames are available."""
        kind = (report.crash_type or "").lower()
        if not (kind.endswith(_SPATIAL) or kind in _SPATIAL_TYPES):
            return None
        stack = report.crash_stack
        if stack is None:
            return None
        frames: list[Frame] = []
        memory_fn = None
        more = False
        for i, f in enumerate(stack.frames):
            if is_harness_boundary(f):
                break
            if is_project_frame(f):
                if len(frames) >= self.max_value_frames:
                    more = True
                    break
                frames.append(f)
            elif frames:
                # a runtime or system frame between project frames: the next project frame
                # does not call this one directly
                more = any(is_project_frame(g) for g in stack.frames[i:])
                break
            elif memory_function(f.function_name):
                memory_fn = memory_function(f.function_name)
        if len(frames) < 2:
            return None
        return ValueChain(frames, memory_fn, more)

    async def _follow_value(
        self,
        tools: RcaTools,
        report: SanitizerReport,
        chain: ValueChain,
        resolved: list[Resolved],
    ) -> Trail | None:
        """One command: read the chain frames' signatures, lines and assignments; then follow
        the value (:func:`.dataflow.follow`). None when fewer than two frames can be read."""
        by_site = {(r.candidate.file, r.candidate.line): r for r in resolved}
        usable: list[tuple[Frame, Resolved]] = []
        for f in chain.frames:
            r = by_site.get((f.file or "", f.line or 1))
            name = (f.function_name or "").rsplit("::", 1)[-1]
            found = (r.fn.name or "").rsplit("::", 1)[-1] if r is not None else ""
            if r is None or r.fn.start is None or not r.path or found != name:
                break  # not found, or the function heuristic disagrees with the report
            usable.append((f, r))
        if len(usable) < 2:
            return None
        more = chain.more_frames or len(usable) < len(chain.frames)
        parts = [
            f"echo '{_MARK} {i}'; "
            + awk_frame(shlex.quote(r.path), r.fn.start or 1, f.line or 1, r.fn.end)
            for i, (f, r) in enumerate(usable)
        ]
        output = (await tools.execute("( " + "\n".join(parts) + " )")).output
        blocks: dict[int, dict[int, str]] = {}
        for block in output.split(_MARK)[1:]:
            head, _, body = block.partition("\n")
            if head.strip().isdigit():
                blocks[int(head.strip())] = parse_numbered(body)
        codes = []
        for i, (f, r) in enumerate(usable):
            if i not in blocks:
                more = True
                break
            codes.append(
                frame_code(
                    f.function_name or "",
                    r.rel_path,
                    f.line or 1,
                    f.column,
                    r.fn.start or 1,
                    blocks[i],
                )
            )
        if not codes:
            return None
        return follow(
            codes,
            memory_fn=chain.memory_fn,
            access=report.access,
            more_frames=more or len(codes) < len(usable),
        )

    @staticmethod
    def promote_origin(resolved: list[Resolved], chain: ValueChain, trail: Trail) -> list[Resolved]:
        """The frame that produced the bad value first, then everything else in order."""
        if not trail.origin:
            return resolved
        f = chain.frames[trail.origin]
        at = next(
            (
                i
                for i, r in enumerate(resolved)
                if (r.candidate.file, r.candidate.line) == (f.file, f.line)
            ),
            None,
        )
        if at is None:
            return resolved
        r = resolved[at]
        note = trail.steps[-1].note if trail.steps else ""
        via = " <- ".join(s.function for s in trail.steps)
        role = f"origin of the out-of-bounds value ({via}): {note}"
        lead = replace(r, candidate=replace(r.candidate, role=role))
        return [lead, *resolved[:at], *resolved[at + 1 :]]

    def locations(self, resolved: list[Resolved]) -> list[Location]:
        out: list[Location] = []
        for r in resolved:
            lo, hi = tight_span(r.candidate.line, r.fn, self.context_lines)
            if any(
                loc.file == r.rel_path and lo <= loc.line_end and hi >= loc.line_start
                for loc in out
            ):
                continue
            out.append(
                Location(
                    file=r.rel_path,
                    function=r.candidate.function or r.fn.name,
                    line_start=lo,
                    line_end=hi,
                    description=r.candidate.role,
                )
            )
            if len(out) >= self.max_locations:
                break
        return out

    @staticmethod
    def reasoning(
        report: SanitizerReport, resolved: list[Resolved], trail: Trail | None = None
    ) -> str:
        kind = report.crash_type or "crash"
        bits = [f"{report.sanitizer or 'The sanitizer'} reports {kind}"]
        if report.access:
            bits.append(
                f"({report.access}"
                + (f" of size {report.access_size})" if report.access_size else ")")
            )
        if report.ub_message:
            bits.append(f": {report.ub_message}")
        crash = next((r for r in resolved if r.candidate.role.startswith("crash site")), None)
        if crash is None and resolved:
            crash = resolved[0]
        if crash is not None:
            bits.append(
                f"at {crash.rel_path}:{crash.candidate.line}"
                + (f" in {crash.candidate.function}" if crash.candidate.function else "")
            )
        text = " ".join(bits) + "."
        if trail is not None and trail.why:
            text += " " + trail.why
        if trail is not None and trail.moved:
            return text + (
                " Ranked: the origin of the bad value, the crash site, then the related "
                "allocation site and callers."
            )
        return text + (
            " Locations are ranked from the stack trace (crash site, then the related "
            "free/allocation/origin site and callers)."
        )

    def _settings(self) -> dict[str, object]:
        return {
            "max_locations": self.max_locations,
            "max_callers": self.max_callers,
            "context_lines": self.context_lines,
            "report_bytes": self.report_bytes,
            "max_value_frames": self.max_value_frames,
        }

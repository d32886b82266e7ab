"""The stack-trace analyst: a deterministic, LLM-free policy and the honest baseline to beat.

It reads the sanitizer report through the environment, ranks the report's frames
(:mod:`.ranking`), looks each candidate up in the source tree (:mod:`.resolve`: does the file
exist; which function encloses the line; a frame without a line stands for its function), and
submits up to five spans, one per function, through the same ``submit_localization`` path as
the agent. Three commands at least: list the tree + read the report, outline the candidate
files, write loc.json; then, by bug class:

- lifetime bugs (use-after-free, double free), one more (:mod:`.lifetime`): the free and
  allocation stacks' bodies, so that the project's wrappers make way for the frames that
  decided to free or allocate, and the crash frame, for where the dangling pointer was taken;
- spatial bugs (buffer overflows, out-of-bounds indexes), one more: the crash stack's frames
  are read and the out-of-bounds index/length is followed up the stack while it is a parameter
  (:mod:`.dataflow`), through the project's function-like macros. When a caller produced it (a
  local, a constant, a struct member, a call result), that frame leads, followed by the crash
  site; the trail is written into loc.json's reasoning either way; the existing checks of the
  value open the spans of the crash site and of its origin;
- overflows of a buffer allocated by the project, one to three more (:mod:`.helpers`): the
  allocation site is read and the helper that computed the size is found, though it is on no
  stack; it leads when it rounds down what the access rounds up (:mod:`.shortsize`).
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass, replace
from pathlib import Path

from services.purple.analyst.caccess import memory_function
from services.purple.analyst.cfunc import parse_numbered
from services.purple.analyst.clex import awk_macros, macro_transparent
from services.purple.analyst.dataflow import Trail, follow, guard_line
from services.purple.analyst.frameread import awk_frame, frame_code
from services.purple.analyst.helpers import HELPER_ROLE, size_helpers
from services.purple.analyst.holders import dangling_member, holders_command, parse_holders
from services.purple.analyst.lifetime import (
    body_reads,
    find_wrappers,
    lifetime_command,
    parse_lifetime,
    pointer_taken_at,
)
from services.purple.analyst.ranking import Candidate, frame_key, rank
from services.purple.analyst.resolve import (
    MARK,
    MAX_GUARD,
    Resolved,
    locations,
    parse_resolved,
    resolve_command,
)
from services.purple.analyst.shortsize import promote_short_size
from services.purple.protocols import RunResult, TaskContext
from services.purple.signals import TaskEnded, Terminating, ending
from services.purple.tools.rca import RcaTools
from services.purple.trajectory import Trajectory
from services.shared.loc import Location
from services.shared.logging import get_logger
from services.shared.sanitizer import Frame, SanitizerReport, parse_report
from services.shared.sanitizer.frame_roles import (
    is_harness_boundary,
    is_project_frame,
    project_frames,
)

log = get_logger(__name__)


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
        span_before: int = 3,
        span_after: int = 1,
        report_bytes: int = 48_000,
        max_value_frames: int = 5,
        trajectory_dir: str | Path | None = None,
    ) -> None:
        self.max_locations = max_locations
        self.max_value_frames = max_value_frames
        self.max_callers = max_callers
        self.span_before = span_before
        self.span_after = span_after
        self.report_bytes = report_bytes
        self.trajectory_dir = trajectory_dir

    async def run(self, task: TaskContext) -> RunResult:
        start = time.monotonic()
        stats = task.usage
        traj = Trajectory(self.trajectory_dir, task.task_id, self.name)
        task.commands.trajectory = traj  # no LLM turns: steps stay 0
        tools = RcaTools(
            task.env,
            task.paths,
            command_timeout=task.command_timeout_s,
            commands=task.commands,
            stats=lambda: stats.model_copy(),
        )
        traj.event("start", policy=self.name, task_id=task.task_id, paths=task.paths.model_dump())
        status, reason, submission = "error", "cancelled", None
        try:
            status, reason = "error", await self._analyse(tools, traj)
        except Exception as exc:
            if not isinstance(exc, Terminating):
                log.exception("analyst failed", task_id=task.task_id)
            status, reason, submission = ending(exc)
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
                f"ls -1 {shlex.quote(src)}; echo {MARK}; "
                + self._read_report_cmd(tools.paths.error_report)
            )
        ).output.partition(MARK)
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
        keep = {frame_key(f) for f in chain.frames} if chain else set()
        if report.is_lifetime_bug:
            keep |= {c.key for c in candidates if "free" in c.role or "alloc" in c.role}
        resolved = await self._resolve(tools, candidates, folders, keep=keep)
        if report.is_lifetime_bug:
            resolved = await self._lifetime(tools, report, resolved)
        traj.event(
            "candidates",
            ranked=[c.__dict__ for c in candidates],
            resolved=[
                {"file": r.rel_path, "line": r.candidate.line, "fn": r.fn.__dict__}
                for r in resolved
            ],
        )
        trail = None
        try:
            if chain is not None:
                trail = await self._follow_value(tools, report, chain, resolved)
            if report.is_overflow:
                resolved = await size_helpers(tools, resolved, folders)
        except TaskEnded:
            raise
        except Exception:  # a lexical heuristic must never cost the submission
            log.exception("source heuristics failed; ranking from the stack alone")
        if trail is not None and chain is not None:
            traj.event(
                "value_trail",
                origin=trail.origin,
                access=trail.access,
                steps=[step.__dict__ for step in trail.steps],
                why=trail.why,
            )
            resolved = self.promote_origin(self.mark_guards(resolved, chain, trail), chain, trail)
            if report.is_overflow:  # the size rounds down what the access rounds up
                resolved = await promote_short_size(tools, report, resolved, trail, folders)
        found = self.locations(resolved)
        if not found:
            return "none of the candidate files exists in the source tree"
        reasoning = self.reasoning(report, resolved, trail)
        reply = await tools.submit_localization(found, reasoning)
        if len(found) > 1:  # refused: retry with the crash site alone
            reply = await tools.submit_localization(found[:1], reasoning)
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

    def rank(
        self, report: SanitizerReport, wrappers: frozenset[str] = frozenset()
    ) -> list[Candidate]:
        """Candidates, best first (:func:`.ranking.rank`)."""
        return rank(report, max_callers=self.max_callers, wrappers=wrappers)

    # ---- looking candidates up in the tree ---------------------------------------------------

    async def _resolve(
        self,
        tools: RcaTools,
        candidates: list[Candidate],
        folders: list[str],
        keep: set | None = None,
    ) -> list[Resolved]:
        """One command: find each candidate's file in the tree and outline it around the line.
        The first ``2 * max_locations`` candidates are looked up, and those in ``keep``."""
        src = tools.paths.source_dir.rstrip("/")
        wanted = {
            i
            for i, c in enumerate(candidates)
            if i < 2 * self.max_locations or c.key in (keep or set())
        }
        output = (await tools.execute(resolve_command(candidates, src, folders, wanted))).output
        return parse_resolved(output, candidates, src)

    async def _lifetime(
        self, tools: RcaTools, report: SanitizerReport, resolved: list[Resolved]
    ) -> list[Resolved]:
        """One command (:mod:`.lifetime`): the free/alloc stacks' bodies (their wrappers make
        way for the frames that decided) and the crash frame's code (where the dangling
        pointer was taken opens the crash site's span)."""
        reads = body_reads(report, resolved)
        frame = next(iter(project_frames(report.crash_stack)), None)
        by_key = {r.candidate.key: r for r in resolved}
        crash = by_key.get(frame_key(frame)) if frame is not None else None
        if report.crash_type == "double-free":
            crash = None  # nothing is dereferenced
        if not reads and crash is None:
            return resolved
        output = (await tools.execute(lifetime_command(reads, crash))).output
        bodies, lines = parse_lifetime(output)
        if crash is not None and frame is not None:
            taken = pointer_taken_at(frame, crash, lines)
            if taken is not None and crash.line - taken < MAX_GUARD:
                by_key[crash.candidate.key] = replace(crash, guard=taken)
        wrappers = find_wrappers(reads, bodies)
        order = self.rank(report, frozenset(wrappers)) if wrappers else None
        if order is None:
            out = [by_key[r.candidate.key] for r in resolved]
        else:
            out = [replace(by_key[c.key], candidate=c) for c in order if c.key in by_key]
        member = None
        if crash is not None and frame is not None and frame.line in lines:
            member = dangling_member(lines[frame.line], frame.column)
        if member is None:
            return out
        # the other holders of the freed pointer: one more command
        root = crash.path[: -len(crash.rel_path)].rstrip("/")  # type: ignore[union-attr]
        found = (await tools.execute(holders_command(member, shlex.quote(root)))).output
        src = tools.paths.source_dir.rstrip("/")
        holders = parse_holders(found, member, src)
        at = next((i + 1 for i, r in enumerate(out) if "allocated" in r.candidate.role), 3)
        return [*out[:at], *holders, *out[at:]]

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
        by_site = {r.candidate.key: r for r in resolved}
        usable: list[tuple[Frame, Resolved]] = []
        for f in chain.frames:
            r = by_site.get(frame_key(f))
            name = (f.function_name or "").rsplit("::", 1)[-1]
            found = (r.fn.name or "").rsplit("::", 1)[-1] if r is not None else ""
            if r is None or r.fn.start is None or not r.path or found != name or not f.line:
                break  # not found, no line, or the function heuristic disagrees with the report
            usable.append((f, r))
        if len(usable) < 2:
            return None
        more = chain.more_frames or len(usable) < len(chain.frames)
        r0 = usable[0][1]
        root = r0.path[: -len(r0.rel_path)].rstrip("/") if r0.path.endswith(r0.rel_path) else ""
        parts = [
            f"echo '{MARK} {i}'; "
            + awk_frame(shlex.quote(r.path), r.fn.start or 1, f.line or 1, r.fn.end)
            for i, (f, r) in enumerate(usable)
        ]
        if root:  # the project's function-like macros: the dataflow reads through them
            parts.append(f"echo '{MARK} macros'; " + awk_macros(shlex.quote(root)))
        output = (await tools.execute("( " + "\n".join(parts) + " )")).output
        blocks: dict[int, dict[int, str]] = {}
        macros: frozenset[str] = frozenset()
        for block in output.split(MARK)[1:]:
            head, _, body = block.partition("\n")
            if head.strip().isdigit():
                blocks[int(head.strip())] = parse_numbered(body)
            elif head.strip() == "macros":
                macros = frozenset(w for w in body.split() if w.isidentifier())
        codes = []
        for i, (f, r) in enumerate(usable):
            if i not in blocks:
                more = True
                break
            lines = {n: macro_transparent(t, macros) for n, t in blocks[i].items()}
            codes.append(
                frame_code(
                    f.function_name or "", r.rel_path, f.line or 1, f.column, r.fn.start or 1, lines
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
    def mark_guards(resolved: list[Resolved], chain: ValueChain, trail: Trail) -> list[Resolved]:
        """The existing checks of the bad value: in the crash frame, and in the frame that
        produced it (the caller that should have checked)."""
        if not trail.steps or not trail.frames:
            return resolved
        guards = {frame_key(chain.frames[0]): guard_line(trail.frames[0], trail.steps[0].values)}
        k = trail.origin
        if k and k < len(trail.frames):
            guards[frame_key(chain.frames[k])] = guard_line(trail.frames[k], trail.steps[-1].values)
        return [
            replace(r, guard=guards[r.candidate.key]) if guards.get(r.candidate.key) else r
            for r in resolved
        ]

    @staticmethod
    def promote_origin(resolved: list[Resolved], chain: ValueChain, trail: Trail) -> list[Resolved]:
        """The frame that produced the bad value first, then everything else in order."""
        if not trail.origin:
            return resolved
        crash = frame_key(chain.frames[0])
        if any(r.candidate.key == crash and r.guard is not None for r in resolved):
            return resolved  # the crash frame checks the value itself: that check let it through
        f = chain.frames[trail.origin]
        at = next(
            (i for i, r in enumerate(resolved) if r.candidate.key == frame_key(f)),
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
        return locations(resolved, self.max_locations, self.span_before, self.span_after)

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
                f"at {crash.rel_path}:{crash.line}"
                + (f" in {crash.candidate.function}" if crash.candidate.function else "")
            )
        text = " ".join(bits) + "."
        if trail is not None and trail.why:
            text += " " + trail.why
        if resolved and resolved[0].candidate.role.startswith(HELPER_ROLE):
            lead = resolved[0].candidate
            why = lead.role.split(": ", 1)[-1]
            return text + f" Ranked first, before the crash site: {lead.function}, which {why}."
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
            "span_before": self.span_before,
            "span_after": self.span_after,
            "report_bytes": self.report_bytes,
            "max_value_frames": self.max_value_frames,
        }

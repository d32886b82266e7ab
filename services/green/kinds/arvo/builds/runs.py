"""One input on one build of a task's fuzz target: the shell that runs it, and what it did.

The run is ARVO's own: the input goes to ``/tmp/poc`` and ``arvo`` runs the fuzz target on it,
in a fresh container of the build (never the agent's). ``ARENA_BEHAVIOUR=1`` is set, so a harness
that describes what the input parsed to (the bundled fixtures' harnesses do; see
``docs/datasets.md``) prints it on stdout; stdout and stderr are kept apart and bounded
(``ulimit -f``), and the script prints them framed so that nothing the target prints can be
taken for green's own lines: green's lines come first, the target's stdout is base64, its
stderr comes last. libFuzzer runs an input a second time when it looks for a leak (whether it
does can vary from run to run): a stdout that is one output twice counts once. The sanitizer report is read from stderr by green's one report reader
(:mod:`services.green.kinds.arvo.crash`).
"""

from __future__ import annotations

import base64
import re
import shlex

from pydantic import BaseModel

from services.green.kinds.arvo.crash import has_report, parse_report, parse_signature, where
from services.shared.commands import CommandResult
from services.shared.text import clip_middle

SCRATCH = "/tmp/arena-judge"
"""Green's folder in a judging container (inputs, outputs, patches)."""
STDOUT_KEEP = 4096
"""Bytes of the target's stdout kept for the record (its digest covers all of it)."""
STDERR_KEEP = 256 * 1024
"""Bytes of stderr kept: the tail, which holds the sanitizer report."""
FILE_BLOCKS = 16 * 1024
"""``ulimit -f`` of a run (KiB): no file the target writes grows past 16 MiB."""
OUTPUT_KEEP = 6000
"""Characters of a run's stderr stored with its verdict (head and tail)."""

_STATUS = re.compile(r"^arena-exit=(-?\d+)$", re.M)
_STDOUT = re.compile(r"^arena-stdout=([0-9a-f]{64}|-) (\d+) ([A-Za-z0-9+/=]*)$", re.M)
_MARK = "arena-stderr:\n"


def run_part(input_path: str, workdir: str, out: str) -> str:
    """Shell that copies ``input_path`` to ``/tmp/poc`` and becomes ``arvo`` on it in
    ``workdir``, its stdout and stderr in ``<out>.stdout`` and ``<out>.stderr``: its exit status
    is the target's own (96: the input could not be copied)."""
    src, o = shlex.quote(input_path), shlex.quote(out)
    return f"""rm -rf /tmp/poc && cp -- {src} /tmp/poc || exit 96
cd {shlex.quote(workdir)} 2>/dev/null || cd /
exec >{o}.stdout 2>{o}.stderr </dev/null
ulimit -f {FILE_BLOCKS}
ARENA_BEHAVIOUR=1 exec arvo"""


def frame_part(out: str, status: int | str) -> str:
    """Shell that prints what :func:`run_part` left in ``<out>.*`` framed for :func:`read_run`
    (``status``: the run's exit status, a number or a shell word)."""
    o = shlex.quote(out)
    return f"""o={o}
n=$(wc -c <"$o.stdout" 2>/dev/null) || n=0; h=$((n / 2))
if [ $n -gt 0 ] && [ $((n % 2)) -eq 0 ] && cmp -s <(head -c $h "$o.stdout") <(tail -c $h "$o.stdout")
then head -c $h "$o.stdout" >"$o.stdout.1" && mv -f "$o.stdout.1" "$o.stdout"; fi
echo "arena-exit={status}"
echo "arena-stdout=$(sha256sum <"$o.stdout" | cut -c1-64) $(wc -c <"$o.stdout") \
$(head -c {STDOUT_KEEP} "$o.stdout" | base64 -w0)"
echo "arena-stderr:"
tail -c {STDERR_KEEP} "$o.stderr"
"""


def run_script(input_path: str, workdir: str) -> str:
    """Bash that runs ``arvo`` on ``input_path`` in ``workdir`` and prints the framed result,
    in one go (green's fixture builds, as root; a judging container runs the two parts as two
    commands: :class:`~services.green.kinds.arvo.builds.box.JudgeBox`)."""
    d = shlex.quote(SCRATCH)
    return f"""mkdir -p {d} || exit 96
( {run_part(input_path, workdir, f"{SCRATCH}/run")} )
status=$?
{frame_part(f"{SCRATCH}/run", "$status")}"""


class InputRun(BaseModel):
    """What one input did on one build: stored with the verdict, shown on the dashboard."""

    build: str
    """``vulnerable``, ``fixed`` or ``patched``."""
    input: str
    """What was run: ``submission``, ``poc``, or a corpus input's name."""
    exit_code: int
    """``arvo``'s exit status; -1 when it did not finish."""
    timed_out: bool = False
    """It ran past its bound and was killed (a hang: the input's or the build's)."""
    crashed: bool = False
    """A sanitizer report was printed."""
    sanitizer: str | None = None
    """``AddressSanitizer: heap-buffer-overflow``."""
    frame: str | None = None
    """The top in-project frame: ``xml_decode_entity (/src/xmlmini/src/entity.c)``."""
    stdout_sha256: str | None = None
    """sha256 of what the target printed on stdout (its behaviour digest)."""
    stdout: str = ""
    """Its first bytes (for the record)."""
    output: str = ""
    """stderr (the sanitizer report), head and tail."""

    @property
    def clean(self) -> bool:
        """Finished, exit 0, no report."""
        return not self.timed_out and not self.crashed and self.exit_code == 0

    def same_crash(self, other: InputRun) -> bool:
        """Both crashed with the same sanitizer class and top in-project frame."""
        return (
            self.crashed
            and other.crashed
            and (self.sanitizer, self.frame)
            == (
                other.sanitizer,
                other.frame,
            )
        )

    def verdict(self) -> str:
        """A few words on what happened: ``crashed: AddressSanitizer: ... in f (file)``."""
        if self.timed_out:
            return "did not finish (stopped at its time bound)"
        if self.crashed:
            at = f" in {self.frame}" if self.frame else ""
            return f"crashed: {self.sanitizer or 'a sanitizer report'}{at}"
        if self.exit_code != 0:
            return f"exited {self.exit_code} without a sanitizer report"
        return "ran clean (exit 0, no sanitizer report)"


def read_run(result: CommandResult, build: str, name: str, project: str | None) -> InputRun:
    """The :class:`InputRun` the framed output of :func:`run_script` describes."""
    text = result.output
    head, _, stderr = text.partition(_MARK)
    status = _STATUS.search(head)
    out = _STDOUT.search(head)
    run = InputRun(
        build=build,
        input=name,
        exit_code=int(status.group(1)) if status else -1,
        timed_out=result.timed_out,
        output=clip_middle(stderr if status else text, OUTPUT_KEEP),
    )
    if out:
        run.stdout_sha256 = None if out.group(1) == "-" else out.group(1)
        run.stdout = base64.b64decode(out.group(3) or b"").decode("utf-8", "replace")
    report = stderr if status else text
    if has_report(report):
        run.crashed = True
        sig = parse_signature(report, project)
        if sig is not None:
            run.sanitizer = sig.sanitizer_class
            run.frame = where(sig.frame)
        else:  # no SUMMARY line to read (a leak's counts bytes): the report's class
            info = parse_report(report)
            run.sanitizer = f"{info.sanitizer or 'a sanitizer'}: {info.bug_class}"
    return run

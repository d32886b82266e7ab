"""The judge's test run in a fresh SWE-bench container: each test's status from the report pytest
made of it, written where the code under test cannot write.

``python pytest_judge.py UID --pytest [pytest arguments]`` (or ``UID --command CMD``: an
instance's own test command), run as root in the repository (the judge copies this file into the
container, outside the repository). It forks, and the two halves never share a uid:

- the child drops to ``UID`` (no group, no capability; the container allows no new privileges)
  and runs the tests, its output and the judge plugin's report each going down a pipe to the
  parent. Everything the tests import runs here: it can neither write root's files, nor signal
  or trace the parent, nor reach the parent's own output;
- the parent, root, imports nothing but the standard library, reads both pipes until the child
  has ended (and a moment after, for what its leftovers still write), keeps at most
  :data:`LIMIT` bytes of each, writes them to a folder of its own (root's, mode 700), prints that
  folder's path as its last line and exits with the child's status. A pipe only ever grows: a
  line the plugin wrote cannot be taken back, and no path of the report is given to the tests.

A script's own folder, not the working directory, starts ``sys.path``, so pytest is imported as
installed: a ``pytest.py`` or a ``_pytest/`` in the repository cannot stand in for it. Then the
working directory goes first on ``sys.path`` (as ``python -m pytest`` puts it) and pytest runs
with the judge's plugin registered before any other plugin or ``conftest.py``. The plugin writes
one JSON line per test phase: the test's id, the phase, the outcome its report carries once every
other hook has had it, whether it is an expected failure, and whether the phase raised. A phase
that raised and is reported passed was changed after the fact (a hook wrapper that marks every
report passed): the judge fails the task.

It runs under the instance's own Python, however old: the syntax of Python 3.5 (no f-strings,
no annotations) and nothing but the standard library and pytest.
"""

import json
import os
import select
import sys
import tempfile
import time

LIMIT = 16 << 20
"""Bytes kept of the report and of the output (the rest is read and dropped)."""
DRAIN_S = 2.0
"""How long the parent reads on once the child has ended (what it left running still writes)."""
VERDICT = "ARENA-VERDICT "
"""The start of the parent's last line: the folder of ``report.jsonl`` and ``output.txt``."""


def _plugin(pytest, out):
    class JudgePlugin:
        @pytest.hookimpl(hookwrapper=True, tryfirst=True)
        def pytest_runtest_makereport(self, item, call):
            raised = call.excinfo is not None  # read before any other hook can hide it
            outcome = yield
            report = outcome.get_result()
            line = {
                "id": item.nodeid,
                "when": call.when,
                "outcome": report.outcome,
                "xfail": hasattr(report, "wasxfail"),
                "raised": raised,
            }
            out.write(json.dumps(line) + "\n")
            out.flush()

    return JudgePlugin()


def _child(uid, home, mode, args, report_w, output_w):
    """The tests, as ``uid``: returns pytest's exit status (or execs the instance's command)."""
    os.dup2(output_w, 1)
    os.dup2(output_w, 2)
    os.close(output_w)
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    os.environ["HOME"] = home
    if mode == "--command":
        os.close(report_w)
        os.execv("/bin/sh", ["sh", "-c", " ".join(args)])
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    import pytest

    sys.path.insert(0, os.getcwd())
    out = os.fdopen(report_w, "w")
    return int(pytest.main(args, plugins=[_plugin(pytest, out)]))


def _read(pid, fds):
    """Read every pipe in ``fds`` until the child ``pid`` has ended and :data:`DRAIN_S` after
    (or every pipe is closed); returns its wait status and what each pipe gave."""
    kept = dict((fd, bytearray()) for fd in fds)
    live, status, until = list(fds), None, None
    while live:
        if status is None:
            done, wait_status = os.waitpid(pid, os.WNOHANG)
            if done:
                status, until = wait_status, time.monotonic() + DRAIN_S
        elif time.monotonic() > until:
            break
        ready = select.select(live, [], [], 0.1)[0]
        for fd in ready:
            data = os.read(fd, 1 << 16)
            if not data:
                live.remove(fd)
            else:
                room = LIMIT - len(kept[fd])
                kept[fd] += data[: max(room, 0)]
    if status is None:
        status = os.waitpid(pid, 0)[1]
    return status, kept


def _keep(folder, name, data):
    fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(bytes(data))


def main(argv):
    uid, mode, args = int(argv[1]), argv[2], argv[3:]
    if mode not in ("--pytest", "--command"):
        sys.stderr.write("usage: pytest_judge.py UID --pytest ARGS | --command CMD\n")
        return 2
    folder = tempfile.mkdtemp(prefix="arena-verdict-")  # root's, mode 700
    home = tempfile.mkdtemp(prefix="arena-tests-home-")
    os.chown(home, uid, uid)
    report_r, report_w = os.pipe()
    output_r, output_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(report_r)
        os.close(output_r)
        return _child(uid, home, mode, args, report_w, output_w)
    os.close(report_w)
    os.close(output_w)
    status, kept = _read(pid, [report_r, output_r])
    _keep(folder, "report.jsonl", kept[report_r])
    _keep(folder, "output.txt", kept[output_r])
    sys.stdout.write("\n" + VERDICT + folder + "\n")
    sys.stdout.flush()
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

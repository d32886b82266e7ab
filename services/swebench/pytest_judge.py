"""The judge's own pytest run in a fresh SWE-bench container: each test's status from the report
pytest made of it, and a report changed after the fact caught.

``python pytest_judge.py REPORT [pytest arguments]``, run in the repository (the judge copies
this file into the container, outside the repository). A script's own folder, not the working
directory, starts ``sys.path``, so pytest is imported as installed: a ``pytest.py`` or a
``_pytest/`` in the repository cannot stand in for it. Then the working directory goes first on
``sys.path`` (as ``python -m pytest`` puts it) and pytest runs with the judge's plugin
registered before any other plugin or ``conftest.py``. The plugin writes one JSON line per test
phase to REPORT: the test's id, the phase, the outcome its report carries once every other
hook has had it, whether it is an expected failure, and whether the phase raised. A phase that
raised and is reported passed was changed after the fact (a hook wrapper that marks every report
passed): the judge fails the task.

It runs under the instance's own Python, however old: the syntax of Python 3.5 (no f-strings,
no annotations) and nothing but the standard library and pytest.
"""

import json
import os
import sys


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


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    import pytest

    sys.path.insert(0, os.getcwd())
    with open(argv[1], "w") as out:
        return int(pytest.main(argv[2:], plugins=[_plugin(pytest, out)]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))

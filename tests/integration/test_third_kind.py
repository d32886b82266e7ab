"""A third task kind plugs in with one registration line: the example of docs/architecture.md
(tests/green/kinds/needle/kind.py) runs through the real green, a scripted purple and a real
container, and is judged by its own rule."""

from __future__ import annotations

import httpx
import pytest

from services.green.kinds.registry import KINDS, parse_ref
from tests.green.kinds.needle.kind import NeedleKind, needle_line
from tests.integration.helpers import OPERATOR, submit_task, wait_terminal
from tests.support.scripted_purple import Script

pytestmark = pytest.mark.docker


@pytest.fixture
def needle_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(KINDS, NeedleKind.name, NeedleKind)  # the one registration line


def test_the_reference_parser_knows_the_new_kind(needle_registered):
    assert str(parse_ref("needle:0042")) == "needle:42"
    with pytest.raises(ValueError, match="is a number"):
        parse_ref("needle:abc")


@pytest.mark.parametrize(("answer", "found"), [(needle_line("42"), 1.0), (1, 0.0)])
def test_a_needle_task_runs_and_is_judged_by_its_kind(
    needle_registered, start_green, scripted_purple, answer, found
):
    purple_url, seen = scripted_purple(
        Script(commands=["grep -n NEEDLE /workspace/haystack.txt"], submissions=[{"line": answer}])
    )
    green = start_green(purple_url=purple_url)

    task = submit_task(green.url, {"task": "needle:42"})
    assert task["kind"] == "needle" and task["ref"] == "needle:42"
    done = wait_terminal(green.url, task["id"])

    assert done["status"] == "completed", done
    assert done["scores"] == {"found": found, "submitted": True}
    assert done["ground_truth"] == {"line": needle_line("42")}
    assert seen.results[0].output.startswith(f"{needle_line('42')}:NEEDLE")
    [description] = seen.descriptions
    assert "haystack.txt" in description and f"line {needle_line('42')}" not in description
    assert "ground_truth" not in description and f'"line": {needle_line("42")}' not in description
    listed = httpx.get(f"{green.url}/tasks", params={"ref": "needle:042"}, headers=OPERATOR)
    assert [t["id"] for t in listed.json()["items"]] == [task["id"]]

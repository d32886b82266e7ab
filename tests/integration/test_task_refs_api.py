"""The REST task view names a task by its reference: ``ref`` ("arvo:900007") and ``ref_id``,
with ``arvo_id`` kept as a deprecated alias; ``GET /tasks?ref=`` filters by kind and id."""

from __future__ import annotations

import httpx
import pytest

from services.green.store.models import TaskStatus
from tests.ui.test_ui_http import TOKEN, seed

pytestmark = pytest.mark.docker
AUTH = {"authorization": f"Bearer {TOKEN}"}


def test_task_view_has_ref_and_the_deprecated_arvo_id(start_green, green_settings):
    green = start_green(api_token=TOKEN)
    arvo = seed(green_settings, TaskStatus.completed, ref_id="900007")
    swe = seed(green_settings, TaskStatus.completed, ref_id="900007", kind="swebench")
    with httpx.Client(base_url=green.url, headers=AUTH, timeout=30) as c:
        view = c.get(f"/tasks/{arvo}").json()
        assert (view["kind"], view["ref_id"], view["ref"]) == ("arvo", "900007", "arvo:900007")
        assert view["arvo_id"] == "900007"
        both = c.get("/tasks", params={"arvo_id": "900007"}).json()
        assert {t["id"] for t in both["items"]} == {arvo, swe}
        only = c.get("/tasks", params={"ref": "swebench:900007"}).json()
        assert [t["id"] for t in only["items"]] == [swe] and only["items"][0]["ref"].startswith(
            "swebench:"
        )
        assert c.get("/tasks", params={"ref": "arvo:010055x"}).status_code == 422
        assert c.get("/tasks", params={"ref": "nokind:1"}).status_code == 422

"""The trajectory page names what it shows: the model's time per step, and each event purple
recorded beside its messages and commands (the analyst's ``report``, ``candidates``...)."""

from __future__ import annotations

from types import SimpleNamespace

from services.green.ui.templating import templates


def test_the_columns_and_the_events_are_labelled():
    step = {"step": 1, "tokens_in": 10, "tokens_out": 2, "cost": 0.0, "llm_seconds": 1.5,
            "messages": [], "commands": [],
            "other": [{"type": "value_trail", "values": ["len", "n"]}]}  # fmt: skip
    traj = {"policy": "stacktrace", "status": "completed", "steps": [step], "tokens_in": 10,
            "tokens_out": 2, "cost": 0.0, "steps_cut": 0}  # fmt: skip
    task = SimpleNamespace(id="0" * 36, purple_url="http://purple:9019")
    html = templates.env.get_template("trajectory.html").render(
        task=task, traj=traj, where="http://purple:9019"
    )
    assert "LLM s" not in html and "model time (s)" in html
    assert "an event purple recorded: value trail" in html
    assert "&#34;values&#34;" in html or '"values"' in html  # what the event held, when opened

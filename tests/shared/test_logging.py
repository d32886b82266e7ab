"""The log router: one file per task key, inside the run folder."""

from services.shared.logging import LogRouter


def test_a_log_key_from_a_peer_cannot_leave_the_run_folder(tmp_path):
    router = LogRouter(tmp_path / "run", echo=None)
    router.write("../../escape", "line")
    router.write("arvo_10055", "ok")
    router.close_all()
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "_.._escape.log",
        "arvo_10055.log",
    ]
    assert not (tmp_path / "escape.log").exists()


def test_control_characters_in_an_event_are_escaped_on_its_one_line(tmp_path):
    """An agent's command reaches green's log: its ESC, BEL, NUL, CR and U+202E are written as
    escapes, so the line neither drives the terminal that shows it nor forges another line."""
    router = LogRouter(tmp_path / "run", echo=None)
    router.emit({"event": "command.executed", "command": "a\x1b[2J\x07\x00\r\u202eb\nforged=1\tx"})
    router.close_all()
    [line] = (tmp_path / "run" / "agents.log").read_text("utf-8").splitlines()
    assert line == (
        'event=command.executed command="a\\x1b[2J\\x07\\x00\\x0d\\u202eb\\nforged=1\\x09x"'
    )

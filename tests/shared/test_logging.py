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


def test_a_tasks_file_is_open_while_held_and_a_line_of_no_holder_leaves_none_open(tmp_path):
    router = LogRouter(tmp_path / "run", echo=None)
    router.write(None, "service line")  # agents.log stays open
    router.write("task_1", "a line logged under no task context")
    assert router.open_files() == 1
    router.hold("task_2")
    router.hold("task_2")  # e.g. the runner and a request of the same task
    router.write("task_2", "one")
    router.release("task_2")
    router.write("task_2", "two")
    assert router.open_files() == 2
    router.release("task_2")
    assert router.open_files() == 1
    router.write("task_2", "three")  # reopened in append mode, closed again
    assert router.open_files() == 1
    assert (tmp_path / "run" / "task_2.log").read_text().splitlines() == ["one", "two", "three"]
    assert (tmp_path / "run" / "task_1.log").read_text() == "a line logged under no task context\n"
    router.close_all()


def test_a_key_past_a_file_names_length_gets_a_file_of_its_own(tmp_path):
    """A peer's context id may run to thousands of characters; its file name stays within the
    255 bytes a name may hold, and two long keys sharing their start are kept apart."""
    router = LogRouter(tmp_path / "run", echo=None)
    for key in ("task_" + "y" * 1000, "task_" + "y" * 999 + "z", "task_" + "y" * 115):
        router.hold(key)
        router.write(key, key[-1])
        router.release(key)
    names = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert len(names) == 3 and all(len(n) <= 124 for n in names), names
    assert ("task_" + "y" * 115 + ".log") in names  # short enough: the key itself
    assert sorted((tmp_path / "run" / n).read_text() for n in names) == ["y\n", "y\n", "z\n"]

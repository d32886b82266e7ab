"""The ``arena`` commands' help says what each option does for that command."""

from __future__ import annotations

from typer.testing import CliRunner

from services.arena.app import app


def _help(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_report_and_compare_each_describe_their_own_force():
    assert "Report even when the trials of a task were scored" in _help("report")
    assert "Compare even when" not in _help("report")
    assert "Compare even when a task's scoring rule or image digest differs" in _help("compare")


def _commands(group, path=()):
    """Every command of the app, as its path of names."""
    for name, cmd in getattr(group, "commands", {}).items():
        if hasattr(cmd, "commands"):  # a group
            yield from _commands(cmd, (*path, name))
        else:
            yield (*path, name), cmd


def test_every_help_fits_80_columns_with_each_option_help_whole():
    import typer.main

    commands = list(_commands(typer.main.get_command(app)))
    assert len(commands) >= 8  # run, split, report, compare and the tasks commands
    for path, cmd in commands:
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
        assert result.exit_code == 0, (path, result.output)
        lines = result.output.splitlines()
        assert max(map(len, lines)) <= 80, (path, max(lines, key=len))
        assert "…" not in result.output, path  # nothing cut short
        flowing = " ".join(result.output.split())
        for param in cmd.params:
            if getattr(param, "hidden", False):
                continue
            text = " ".join((getattr(param, "help", None) or "").split())
            assert text in flowing, (path, param.name, text)

"""Green: hosts ARVO tasks in per-task containers, serves the agent's commands, judges answers."""

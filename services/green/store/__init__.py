"""Green's SQL state: task_contexts and commands (SQLModel; SQLite by default)."""

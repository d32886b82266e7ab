"""Purple's task_contexts, kept with SQLModel (any SQLAlchemy URL; SQLite by default)."""

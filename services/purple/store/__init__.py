"""Purple's task_contexts, kept with SQLModel (any SQLAlchemy URL; SQLite by default); the schema is owned by the Alembic migrations beside it (docs/database.md)."""

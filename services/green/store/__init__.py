"""Green's SQL state (SQLModel; SQLite or PostgreSQL): the tables, their queries, and the Alembic migrations that own the schema (docs/database.md)."""

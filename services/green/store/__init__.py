"""Green's SQL state (SQLModel; SQLite or PostgreSQL): models, queries, the replicas' queue and registry, and the Alembic migrations that own the schema (docs/database.md)."""

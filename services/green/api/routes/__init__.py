"""Green's REST routes: tasks, assessments, datasets, health."""

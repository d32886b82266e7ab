"""Purple's read-only REST additions (trajectories)."""

"""Real datasets: certify tasks (verify), keep task images under a disk budget, seeded splits,
and prefetch assets and images before a run."""

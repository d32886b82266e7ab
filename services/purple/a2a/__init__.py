"""Purple's A2A face: the executor that takes green's tasks, and the environment that talks back."""

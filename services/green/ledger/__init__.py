"""Who holds a task and what a running task writes behind its requests: the replicas' queue and leases, their registry, the task's own records (the tables are ``store/``)."""

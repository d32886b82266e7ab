"""Task kinds green can host: ARVO root-cause analysis (the default) and SWE-bench issues.

The orchestrator owns the lifecycle (queue, container, purple, deadlines, cleanup); a kind
owns what differs: where a task's files come from, what goes into the container, what the agent
is told, what counts as a submission and how it is scored. See base.py.
"""

from services.green.kinds.base import TaskKind, TaskPlan, split_task_ref

__all__ = ["TaskKind", "TaskPlan", "split_task_ref"]

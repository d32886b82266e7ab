"""Task kinds green can host: ARVO root-cause analysis (the default) and SWE-bench issues.

The orchestrator owns the lifecycle (queue, container, purple, deadlines, cleanup); a kind
owns what differs: where a task's files come from, what goes into the container, what the agent
is told, what counts as a submission and how it is scored. The seam is :mod:`.base`, with the
optional capabilities :mod:`.datasets` (list, prefetch, verify, task images) and :mod:`.report`
(the dashboard's report) and the errors of :mod:`.errors`; the kinds are registered by name in
:mod:`.registry` (import it for the kinds themselves). Nothing outside a kind's own package but
the registry imports it (``scripts/check_layout.py``).
"""

from services.green.kinds.base import KindClass, TaskKind, TaskPlan

__all__ = ["KindClass", "TaskKind", "TaskPlan"]

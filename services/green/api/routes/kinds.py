"""GET /kinds: the task kinds this green serves, with what each declares of its metrics (names in
report order, which are continuous) and of its records (the score fields each carries), so a
client that cannot import a kind (``arena``) reports and compares its runs as green does and
knows a record that lacks a field. What a kind does not declare is ``null`` (its metrics are
then read from its score records)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from services.green.api.deps import OrchestratorDep
from services.green.kinds.base import TaskKind
from services.green.kinds.metrics import continuous_metrics, declared_metrics, record_fields

router = APIRouter(tags=["kinds"])


@router.get("/kinds")
async def list_kinds(orch: OrchestratorDep) -> dict[str, Any]:
    def declared(kind: TaskKind) -> dict[str, Any]:
        continuous = continuous_metrics([kind])
        return {
            "metrics": declared_metrics([kind]),
            "continuous": sorted(continuous) if continuous is not None else None,
            "fields": record_fields(kind),
        }

    return {"kinds": [{"name": name, **declared(kind)} for name, kind in orch.kinds.items()]}

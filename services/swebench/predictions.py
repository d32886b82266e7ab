"""``preds.json``: the predictions file the official harness reads
(``python -m swebench.harness.run_evaluation --predictions_path preds.json``).

Written as a JSON object keyed by instance id, each value
``{"instance_id", "model_name_or_path", "model_patch"}`` (the harness takes the values, as
SWE-agent and mini-swe-agent write it). Read from that, from a JSON list of the same records,
or from JSONL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from services.shared.files import write_atomic, write_json_atomic

Prediction = dict[str, str]


def prediction(instance_id: str, model_name_or_path: str, model_patch: str) -> Prediction:
    return {
        "instance_id": instance_id,
        "model_name_or_path": model_name_or_path,
        "model_patch": model_patch,
    }


def load_predictions(path: str | Path) -> dict[str, Prediction]:
    """Predictions by instance id; a missing file is empty. Raises ValueError when the file
    is not in one of the accepted shapes."""
    path = Path(path)
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    records: list[Any]
    if path.suffix == ".jsonl":
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        data = json.loads(text) if text.strip() else {}
        records = list(data.values()) if isinstance(data, dict) else data
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a list or an object of predictions")
    out: dict[str, Prediction] = {}
    for record in records:
        if not isinstance(record, dict) or "instance_id" not in record:
            raise ValueError(f"{path}: a prediction without instance_id: {str(record)[:120]}")
        out[record["instance_id"]] = {
            "instance_id": record["instance_id"],
            "model_name_or_path": record.get("model_name_or_path") or "",
            "model_patch": record.get("model_patch") or "",
        }
    return out


def write_predictions(path: str | Path, predictions: dict[str, Prediction]) -> None:
    """Write ``preds.json`` (an object keyed by instance id, sorted) atomically; a ``.jsonl``
    path gets one record per line."""
    path = Path(path)
    ordered = dict(sorted(predictions.items()))
    if path.suffix == ".jsonl":
        write_atomic(
            path, "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in ordered.values())
        )
    else:
        write_json_atomic(path, ordered)

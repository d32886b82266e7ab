"""SWE-bench task instances: the dataset's record, loading, selection and image names.

Instances come from a local ``.json`` (a list, or an object of records) / ``.jsonl`` file in
the dataset's field format, or from Hugging Face (``princeton-nlp/SWE-bench_Verified``,
``..._Lite``, ``...SWE-bench``) through the optional ``datasets`` package, imported only when
asked for.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from services.shared.protocol import TaskPaths

DATASETS = {
    "verified": "princeton-nlp/SWE-bench_Verified",
    "lite": "princeton-nlp/SWE-bench_Lite",
    "full": "princeton-nlp/SWE-bench",
}
"""Short names for the Hugging Face datasets."""

DEFAULT_IMAGE_TEMPLATE = "swebench/sweb.eval.x86_64.{id}:latest"
"""The official per-instance evaluation images (``{id}``: see :func:`docker_compatible_id`)."""

WORKDIR = "/testbed"
"""Where the repository lives in SWE-bench images (their working directory)."""


def swe_paths(workdir: str = WORKDIR) -> TaskPaths:
    """Task paths for a SWE-bench container: everything is the repository."""
    return TaskPaths(workspace=workdir, source_dir=workdir, error_report="", submission="")


class DatasetUnavailable(RuntimeError):
    """The instances could not be loaded (no ``datasets`` package, no network, bad file)."""


class SweInstance(BaseModel):
    """One SWE-bench task, with the dataset's field names. Unknown fields are kept."""

    model_config = ConfigDict(extra="allow")

    instance_id: str
    """``<owner>__<repo>-<number>``, e.g. ``django__django-11099``."""
    repo: str
    """``owner/name`` on GitHub."""
    base_commit: str
    """The commit the issue is reported against (the image's checkout)."""
    problem_statement: str
    """The issue text: all the agent is told."""
    patch: str = ""
    """The gold fix (``git diff``), without test changes."""
    test_patch: str = ""
    """The tests written for the fix; applied by the judge, hidden from the agent."""
    FAIL_TO_PASS: list[str] = []
    """Tests that fail before the fix and must pass after it."""
    PASS_TO_PASS: list[str] = []
    """Tests that pass before the fix and must still pass after it."""
    version: str = ""
    environment_setup_commit: str = ""
    hints_text: str = ""
    created_at: str = ""
    image_name: str | None = None
    """Not in the official dataset: this instance's image, when it does not follow the
    template (the local fixtures set it)."""
    test_cmd: str | None = None
    """Not in the official dataset: the command that runs test ids (default: pytest -rA)."""

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _json_list(cls, value: Any) -> Any:
        """The dataset stores these lists as JSON text."""
        if isinstance(value, str):
            text = value.strip()
            if not text:
                return []
            try:
                return json.loads(text)
            except ValueError as exc:
                raise ValueError(f"not a JSON list of test ids: {text[:80]!r}") from exc
        return value

    @field_validator(
        "version", "created_at", "hints_text", "environment_setup_commit", mode="before"
    )
    @classmethod
    def _text(cls, value: Any) -> Any:
        return "" if value is None else value if isinstance(value, str) else str(value)


# ---- image names ------------------------------------------------------------------------------


def docker_compatible_id(instance_id: str) -> str:
    """The instance id as the official images spell it: lower-cased, ``__`` -> ``_1776_``
    (``django__django-11099`` -> ``django_1776_django-11099``)."""
    return instance_id.lower().replace("__", "_1776_")


def image_name(instance: SweInstance | str, template: str | None = None) -> str:
    """The image to run an instance in.

    ``template`` (``{id}``: docker-compatible id, ``{instance_id}``: as is) wins when given;
    else the instance's own ``image_name``; else :data:`DEFAULT_IMAGE_TEMPLATE`.
    """
    iid = instance if isinstance(instance, str) else instance.instance_id
    if template is None and not isinstance(instance, str) and instance.image_name:
        return instance.image_name
    return (template or DEFAULT_IMAGE_TEMPLATE).format(
        id=docker_compatible_id(iid), instance_id=iid
    )


# ---- loading ----------------------------------------------------------------------------------


def load_instances(
    source: str | Path,
    *,
    split: str = "test",
    ids: Iterable[str] | None = None,
    filter_re: str | None = None,
    slice_spec: str | None = None,
) -> list[SweInstance]:
    """Load and select instances.

    ``source``: a ``.json``/``.jsonl`` file, a short name (``verified``, ``lite``, ``full``)
    or a Hugging Face dataset name (``princeton-nlp/SWE-bench_Verified``). Selection: see
    :func:`select`. Raises :class:`DatasetUnavailable`.
    """
    path = Path(source)
    if path.suffix in (".json", ".jsonl") or path.exists():
        records = read_records(path)
    else:
        records = _from_hub(DATASETS.get(str(source).lower(), str(source)), split)
    try:
        instances = [SweInstance.model_validate(r) for r in records]
    except ValueError as exc:
        raise DatasetUnavailable(f"{source}: not SWE-bench instances: {exc}") from exc
    return select(instances, ids=ids, filter_re=filter_re, slice_spec=slice_spec)


def read_records(path: Path) -> list[dict[str, Any]]:
    """Records of a ``.jsonl`` file, or of a ``.json`` list / object of records."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DatasetUnavailable(f"cannot read {path}: {exc}") from exc
    try:
        if path.suffix == ".jsonl":
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        data = json.loads(text)
    except ValueError as exc:
        raise DatasetUnavailable(f"{path}: invalid JSON: {exc}") from exc
    if isinstance(data, dict):
        data = list(data.values())
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise DatasetUnavailable(f"{path}: expected a list of instance objects")
    return data


def _from_hub(name: str, split: str) -> list[dict[str, Any]]:
    try:
        import datasets  # optional: only for loading from Hugging Face
    except ImportError:
        raise DatasetUnavailable(
            f"loading {name!r} from Hugging Face needs the `datasets` package "
            "(pip install datasets), or pass a local .json/.jsonl file of instances"
        ) from None
    try:
        return [dict(r) for r in datasets.load_dataset(name, split=split)]
    except Exception as exc:  # network, unknown dataset or split...
        raise DatasetUnavailable(
            f"cannot load {name!r} (split {split!r}) from Hugging Face: {type(exc).__name__}: {exc}"
        ) from exc


def select(
    instances: list[SweInstance],
    *,
    ids: Iterable[str] | None = None,
    filter_re: str | None = None,
    slice_spec: str | None = None,
) -> list[SweInstance]:
    """Keep ``ids`` (in the dataset's order; an unknown id raises KeyError), then those whose id
    matches the regex ``filter_re``, then the Python slice ``slice_spec`` (``"0:10"``,
    ``":5"``, ``"3"`` = the first 3)."""
    if ids is not None:
        wanted = dict.fromkeys(ids)  # ordered, and a set for the lookups
        known = {i.instance_id for i in instances}
        if missing := [i for i in wanted if i not in known]:
            raise KeyError(f"unknown instance id(s): {', '.join(missing)}")
        instances = [i for i in instances if i.instance_id in wanted]
    if filter_re:
        pattern = re.compile(filter_re)
        instances = [i for i in instances if pattern.search(i.instance_id)]
    if slice_spec:
        instances = instances[_parse_slice(slice_spec)]
    return instances


def _parse_slice(text: str) -> slice:
    parts = text.split(":")
    try:
        values = [int(p) if p.strip() else None for p in parts]
    except ValueError:
        raise ValueError(f"invalid slice {text!r} (e.g. '0:10', ':5', '3')") from None
    if len(values) == 1:
        return slice(values[0])
    if len(values) > 3:
        raise ValueError(f"invalid slice {text!r}")
    return slice(*values)


def issue_description(
    instance: SweInstance, *, workdir: str = WORKDIR, include_hints: bool = False
) -> str:
    """What the agent is told about an instance: the issue, and where the repository is."""
    parts = [
        f"<issue>\n{instance.problem_statement.strip()}\n</issue>",
        f"Repository: {instance.repo} at commit {instance.base_commit[:12] or '(unknown)'}, "
        f"checked out in {workdir}.",
    ]
    if include_hints and instance.hints_text.strip():
        parts.insert(1, f"<hints>\n{instance.hints_text.strip()}\n</hints>")
    return "\n\n".join(parts)

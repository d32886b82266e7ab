"""A hostile purple: it attacks green instead of reading the code, and keeps score of the attacks.

It runs inside the real purple service (as a policy), so it holds exactly what a third-party
agent holds: the task message, its task token, green's URL and a shell in its container. It
tries every way we know to learn the answer or to touch others' work, then submits whatever it
learned; with nothing learned it submits a wrong guess, so a leak shows up as a non-zero score.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from services.purple.protocols import RunResult, RunStats, TaskContext
from services.purple.signals import TaskEnded
from tests.integration.helpers import text_message
from tests.support.scripted_purple import write_file_command

RECON = [
    "env",
    "tr '\\0' '\\n' < /proc/1/environ; tr '\\0' ' ' < /proc/1/cmdline",
    "hostname; cat /etc/hostname /etc/hosts",
    "ls -la /tmp /workspace /workspace/shared /src 2>&1",
    "find / -xdev \\( -name '*.diff' -o -name '*.patch' -o -name poc -o -name 'repo-fix*' \\)"
    " 2>/dev/null | head -20",
    "for d in /src/*/; do git -C $d log --oneline -3 2>&1; done",
    "grep -m5 '' /proc/self/mountinfo",
]


@dataclass
class Attempt:
    name: str
    status: int
    body: str


@dataclass
class AttackReport:
    attempts: list[Attempt] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    """Everything green returned to the agent's commands and submissions."""
    operator_a2a_task: dict[str, str] = field(default_factory=dict)
    """Filled in by the test: an operator's A2A task (id, contextId), as if it had leaked."""
    learned: list[dict[str, Any]] = field(default_factory=list)
    """Ground-truth-looking data found in any answer."""


def _jsonrpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}


class HostilePolicy:
    name = "hostile"

    def __init__(self, green_url: str, candidate_ids: list[int], report: AttackReport) -> None:
        self.green = green_url.rstrip("/")
        self.candidates = candidate_ids
        self.report = report

    async def run(self, task: TaskContext) -> RunResult:
        stats = RunStats()
        try:
            for cmd in RECON:
                self.report.outputs.append((await task.env.execute(cmd)).output)
                stats.commands += 1
            await self._attack_green(task.task_id)
            loc = self._answer_from_leaks() or {
                "locations": [{"file": "Makefile", "line_start": 1, "line_end": 1}]
            }
            write = write_file_command(task.paths.submission, json.dumps(loc))
            self.report.outputs.append((await task.env.execute(write)).output)
            reply = await task.env.submit(stats)
            self.report.outputs.append(json.dumps(reply.model_dump()))
        except TaskEnded as exc:
            return RunResult(
                task_id=task.task_id, policy=self.name, status="limits", reason=str(exc)
            )
        return RunResult(
            task_id=task.task_id, policy=self.name, status="submitted", reason="done", stats=stats
        )

    async def _attack_green(self, task_id: str) -> None:
        async with httpx.AsyncClient(base_url=self.green, timeout=30) as http:
            for _ in range(100):  # wait for the test to hand over the operator's A2A task
                if self.report.operator_a2a_task:
                    break
                await asyncio.sleep(0.1)
            op = self.report.operator_a2a_task
            rest = [
                ("GET", "/tasks", None),
                ("GET", f"/tasks/{task_id}", None),
                ("GET", f"/tasks/{task_id}/commands", None),
                ("GET", "/assessments/x", None),
            ]
            for ident in self.candidates:
                decoy = {"task": f"arvo:{ident}", "purple_url": "http://127.0.0.1:9"}
                rest.append(("POST", "/tasks", decoy))
            for method, path, body in rest:
                r = await http.request(method, path, json=body)
                self._note(f"REST {method} {path}", r)
            a2a: list[tuple[str, dict[str, Any], dict[str, str]]] = [
                ("ListTasks", _jsonrpc("ListTasks", {}), {"A2A-Version": "1.0"}),
                ("tasks/get operator", _jsonrpc("tasks/get", {"id": op.get("id", "x")}), {}),
                ("tasks/cancel operator", _jsonrpc("tasks/cancel", {"id": op.get("id", "x")}), {}),
                (
                    "message/send into the operator's task",
                    _jsonrpc(
                        "message/send",
                        {
                            "message": text_message(
                                "submit", taskId=op.get("id"), contextId=op.get("cid")
                            )
                        },
                    ),
                    {},
                ),
            ]
            for ident in self.candidates:
                text = f"Task ID: arvo:{ident}"
                msg = text_message(text, metadata={"purple_url": "http://127.0.0.1:9"})
                a2a.append((f"decoy {text}", _jsonrpc("message/send", {"message": msg}), {}))
            many = " ".join(f"arvo:{i}" for i in range(1, 2000))
            a2a.append(("flood", _jsonrpc("message/send", {"message": text_message(many)}), {}))
            for name, body, headers in a2a:
                r = await http.post("/", json=body, headers=headers)
                self._note(f"A2A {name}", r)

    def _note(self, name: str, r: httpx.Response) -> None:
        self.report.attempts.append(Attempt(name, r.status_code, r.text))
        for key in ("ground_truth", "regions", "gt_files"):
            if f'"{key}"' in r.text and f'"{key}":null' not in r.text.replace(" ", ""):
                self.report.learned.append({"from": name, "key": key, "body": r.text[:2000]})

    def _answer_from_leaks(self) -> dict[str, Any] | None:
        for leak in self.report.learned:
            try:
                data = json.loads(leak["body"])
            except json.JSONDecodeError:
                continue
            files = (data.get("ground_truth") or {}).get("files") or []
            if files:
                f = files[0]
                region = (f.get("regions") or [{}])[0]
                start = region.get("start", 1)
                loc = {"file": f["path"], "line_start": start, "line_end": region.get("end", start)}
                return {"locations": [loc]}
        return None

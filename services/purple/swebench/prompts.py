"""What the agent is told about a SWE-bench instance (the prompt templates are the agent's:
services/purple/agent/prompts/swe.toml)."""

from __future__ import annotations

from services.green.swebench.instances import WORKDIR, SweInstance


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

"""The agent's SWE-bench kind: the issue-fixing toolset and prompts of the ReAct loop.

- :mod:`.toolset` — ``SweToolset`` (tools of :mod:`services.purple.tools.swe` + prompts);
- :mod:`.prompts` — the issue-fixing system prompt and task message.

Purple uses it for ``swebench:`` tasks green sends; the standalone harness (instances, runner,
judge, ``preds.json``) is :mod:`services.swebench`, which drives this agent.
"""

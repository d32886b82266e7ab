"""SWE-bench mode: the same ReAct agent fixes GitHub issues and writes ``preds.json``.

- :mod:`.toolset` — ``SweToolset`` (tools of :mod:`services.purple.tools.swe` + prompts);
- :mod:`.environment` — the agent's commands in a sandbox, with the conda env activated;
- :mod:`.runner` — one container per instance, the agent, the patch, ``preds.json``;
- :mod:`.predictions` — reading and writing ``preds.json``;
- :mod:`.cli` — ``python -m services.purple.swebench run|evaluate``.

The instances (``SweInstance``, loading, image names) and the local judge are green's:
:mod:`services.green.swebench`.
"""

"""SWE-bench mode: the same ReAct agent fixes GitHub issues and writes ``preds.json``.

- :mod:`.instances` — ``SweInstance``, loading (file or Hugging Face), selection, image names;
- :mod:`.toolset` — ``SweToolset`` (tools of :mod:`services.purple.tools.swe` + prompts);
- :mod:`.environment` — the agent's commands in a sandbox, with the conda env activated;
- :mod:`.runner` — one container per instance, the agent, the patch, ``preds.json``;
- :mod:`.evaluate` — the local judge (apply, run tests, resolved?), reusable by green;
- :mod:`.cli` — ``python -m services.purple.swebench run|evaluate``.
"""

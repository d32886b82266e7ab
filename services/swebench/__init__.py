"""The standalone SWE-bench harness: instances, the judge, ``preds.json``, the runner and its CLI.

- :mod:`.instances` — ``SweInstance``, loading and selection, image names, the issue text;
- :mod:`.activation` — how commands reach the image's Python (the conda prefix);
- :mod:`.judge` — apply a patch and run FAIL_TO_PASS / PASS_TO_PASS in a fresh container;
- :mod:`.predictions` — reading and writing ``preds.json``;
- :mod:`.environment` — the agent's commands in a sandbox, with the Python env activated;
- :mod:`.runner` — one container per instance, the purple agent, the patch, ``preds.json``;
- :mod:`.cli` — ``arena-swebench run|evaluate`` (``python -m services.swebench``).

``instances``, ``activation`` and ``judge`` use only ``services.shared`` and the sandbox: green's
SWE-bench kind serves tasks with them. ``environment``, ``runner`` and ``cli`` drive the purple
agent. Nothing here imports green.
"""

"""``arena``: the batch client of green — run tasks over REST, follow them, report on the run.

- :mod:`.app` — the typer app (``arena run``, ``arena report``, ``arena tasks``), :mod:`.options`;
- :mod:`.batch` — one batch: submit, follow, save the logs, record each outcome;
- :mod:`.client` — green's task routes with retries and polling (the operator token to green
  only);
- :mod:`.live` — the live view (rich);
- :mod:`.results` — ``results.json``: outcomes, sessions, the aggregate;
- :mod:`.report`, :mod:`.breakdown` — ``report.md`` and ``scores.png``;
- :mod:`.tasks`, :mod:`.tasks_client` — ``arena tasks ...`` (prefetch, verify, images, sample);
- :mod:`.refs`, :mod:`.splits` — task references, ids files and seeded splits.

It talks to green and purple over HTTP only and imports neither: only :mod:`services.shared`.
"""

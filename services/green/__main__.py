"""``python -m services.green --host H --port P --card-url U``

The listening socket is bound before green's modules are imported and its app built (seconds on
a busy machine): from the first moment a connection is accepted by the kernel and waits in the
backlog until green serves it, instead of being refused (docs/deployment.md, "Start-up").
"""

from __future__ import annotations

import typer

from services.green.config import GreenSettings
from services.shared.memory import tune_allocator
from services.shared.startup import without_gc

cli = typer.Typer(add_completion=False)


@cli.command()
def serve(
    host: str = typer.Option(None, help="Interface to listen on (default GREEN_HOST or 127.0.0.1)"),
    port: int = typer.Option(None, help="Port (default GREEN_PORT or 9009)"),
    card_url: str = typer.Option(
        None,
        "--card-url",
        help="URL advertised in the agent card "
        "(also given to purple unless GREEN_PUBLIC_URL says otherwise)",
    ),
) -> None:
    tune_allocator()  # services/shared/memory.py: before any thread starts
    overrides = {k: v for k, v in {"host": host, "port": port, "card_url": card_url}.items() if v}
    settings = GreenSettings(**overrides)
    from services.green.edge.server import bind, run

    sock = bind(settings)
    with without_gc():  # services/shared/startup.py
        from services.green.app import create_app

        app = create_app(settings)
    run(app, settings, sock)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()

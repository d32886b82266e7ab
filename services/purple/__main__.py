"""Start purple's server: ``python -m services.purple --host H --port P --card-url U``."""

from __future__ import annotations

import typer
import uvicorn

from services.purple.config import PurpleSettings
from services.shared.memory import tune_allocator
from services.shared.startup import without_gc

cli = typer.Typer(add_completion=False)


@cli.command()
def serve(
    host: str = typer.Option(
        None, help="Interface to listen on (default PURPLE_HOST or 127.0.0.1)"
    ),
    port: int = typer.Option(None, help="Port (default PURPLE_PORT or 9019)"),
    card_url: str = typer.Option(None, "--card-url", help="URL advertised in the agent card"),
) -> None:
    tune_allocator()  # services/shared/memory.py: before any thread starts
    overrides = {k: v for k, v in {"host": host, "port": port, "public_url": card_url}.items() if v}
    settings = PurpleSettings(**overrides)
    with without_gc():  # services/shared/startup.py
        from services.purple.app import create_app

        app = create_app(settings)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning")


def main() -> None:
    cli()


if __name__ == "__main__":
    main()

"""``python -m services.green --host H --port P --card-url U``"""

from __future__ import annotations

import typer
import uvicorn

from services.green.config import GreenSettings

cli = typer.Typer(add_completion=False)


@cli.command()
def serve(
    host: str = typer.Option(None, help="Interface to listen on (default GREEN_HOST or 127.0.0.1)"),
    port: int = typer.Option(None, help="Port (default GREEN_PORT or 9009)"),
    card_url: str = typer.Option(None, "--card-url", help="URL advertised in the agent card and to purple"),
) -> None:
    overrides = {k: v for k, v in {"host": host, "port": port, "public_url": card_url}.items() if v}
    settings = GreenSettings(**overrides)
    from services.green.app import create_app

    uvicorn.run(create_app(settings), host=settings.host, port=settings.port,
                log_level="warning", timeout_graceful_shutdown=30)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()

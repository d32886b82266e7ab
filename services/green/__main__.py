"""``python -m services.green --host H --port P --card-url U``"""

from __future__ import annotations

import typer

from services.green.config import GreenSettings

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
    overrides = {k: v for k, v in {"host": host, "port": port, "card_url": card_url}.items() if v}
    settings = GreenSettings(**overrides)
    from services.green.app import create_app
    from services.green.server import run

    run(create_app(settings), settings)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()

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

    app = create_app(settings)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        timeout_graceful_shutdown=30,
    )
    GreenServer(config).run()


class GreenServer(uvicorn.Server):
    """Tells the orchestrator at the first signal, before uvicorn drains its connections, so a
    task cut off by the shutdown is recorded as an infra failure, not as the agent's."""

    def handle_exit(self, sig, frame) -> None:
        self.config.app.state.orchestrator.begin_shutdown()
        super().handle_exit(sig, frame)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()

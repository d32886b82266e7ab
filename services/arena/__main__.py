"""``python -m services.arena ...``: the ``arena`` console script (see :mod:`.app`)."""

from services.arena.app import app

if __name__ == "__main__":
    app()

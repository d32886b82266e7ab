"""``python -m services.swebench run|evaluate ...`` (see :mod:`.cli`)."""

from services.swebench.cli import main

if __name__ == "__main__":
    main()

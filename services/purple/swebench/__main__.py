"""``python -m services.purple.swebench run|evaluate ...`` (see :mod:`.cli`)."""

from services.purple.swebench.cli import main

if __name__ == "__main__":
    main()

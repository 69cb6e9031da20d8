"""``python -m kinetic``: the ``kinetic`` command line."""

from kinetic.cli import main

if __name__ == "__main__":
    main()

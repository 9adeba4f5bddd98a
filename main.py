"""Colorizer. ``python main.py [PATH...] [--output DIR] [--start]`` opens the app;
``python main.py colorize|bench|train|readout|evaluate|tune|models ...`` runs the command line.
"""

import sys

SUBCOMMANDS = ("colorize", "bench", "train", "readout", "evaluate", "tune", "models", "-h", "--help")


def main(argv: list[str]) -> int:
    if argv and argv[0] in SUBCOMMANDS:
        from engine.cli import main as cli_main

        return cli_main(argv)
    from gui.app import run_app

    return run_app(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

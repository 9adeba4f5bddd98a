"""The one error a command raises for a mistake on its command line: ``main`` hands it to argparse (exit 2)."""


class UsageError(Exception):
    pass

"""``python -m engine.bench --worker SPEC``: one configuration timed in this fresh process (``timing``)."""

import sys

from .timing import worker_main

if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2])

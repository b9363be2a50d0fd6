"""A flood client: submits jobs through the CLI's own submit path (gq.cli.entry.submit), as
`gq submit` does, and prints each acknowledged id on its own line.

    python flood_worker.py COUNT|--until STOPFILE  SUBMIT-ARGS...

With --until it submits until STOPFILE exists. A refused submit ends it with the `gq: ` line
the CLI would print, and exit code 1."""

from __future__ import annotations

import os
import sys

from gq.cli.entry import submit
from gq.protocol import GqError


def main() -> int:
    if sys.argv[1] == "--until":
        stop, count, argv = sys.argv[2], None, sys.argv[3:]
    else:
        stop, count, argv = None, int(sys.argv[1]), sys.argv[2:]
    done = 0
    while (count is None and not os.path.exists(stop)) or (count is not None and done < count):
        try:
            submit(argv)
        except GqError as e:
            print(f"gq: {e.message}", file=sys.stderr)
            return 1
        sys.stdout.flush()
        done += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

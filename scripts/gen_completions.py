#!/usr/bin/env python3
"""Generate completions/gq.{bash,zsh,fish} from gq's CLI; `--check` fails when one is stale."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "completions"

sys.path.insert(0, str(ROOT))


def files() -> dict[Path, str]:
    from gq.cli.completion import SHELLS, script

    return {OUT / f"gq.{shell}": script(shell) for shell in SHELLS}


def stale() -> list[Path]:
    return [path for path, text in files().items()
            if not path.exists() or path.read_text() != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if a completion script is stale, instead of rewriting them")
    args = parser.parse_args(argv)
    if args.check:
        old = stale()
        for path in old:
            print(f"{path.relative_to(ROOT)} is stale: run python scripts/gen_completions.py",
                  file=sys.stderr)
        return 1 if old else 0
    OUT.mkdir(exist_ok=True)
    for path, text in files().items():
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark completing a job id: `gq __complete` against `python -c pass`, and through bash."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from _harness import (
    TempDaemon, gq_script, interleaved, machine, print_table, round_options, verdict,
)

from gq.cli.submit_args import request_args

TARGET_RATIO = 2.0  # completing a job id at most 2x a bare interpreter start
ROOT = Path(__file__).resolve().parent.parent
BASH_SCRIPT = ROOT / "completions" / "gq.bash"


def queue(daemon: TempDaemon, jobs: int, array: int) -> None:
    """`jobs` held single jobs and one held array of `array` elements: a busy queue."""
    args = request_args({"gpus": "0", "hold": True}, ["true"])
    with daemon.connect() as conn:
        for _ in range(jobs):
            conn.call("submit", **args)
        conn.call("submit", **args, array={"indices": list(range(array)), "limit": 4})


def bash_line(gq: str, words: str) -> list[str]:
    """bash sourcing the generated script and completing `words` as a Tab would."""
    script = (f"source {BASH_SCRIPT}; COMP_WORDS=({words} ''); "
              "COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _gq; printf '%s\\n' \"${COMPREPLY[@]}\"")
    return ["bash", "--norc", "--noprofile", "-c", script.replace("gq ", f"{gq} ", 1)]


def main() -> int:
    opts, rounds, warmup = round_options(__doc__)
    jobs, array = 200, 100
    gq = gq_script()
    with TempDaemon(os.cpu_count() or 1) as daemon:
        queue(daemon, jobs, array)
        medians = interleaved({
            "complete": [gq, "__complete", "jobs", "cancel", ""],
            "python": [sys.executable, "-c", "pass"],
            "bash_tab": bash_line(gq, "gq cancel"),
            "bash": ["bash", "--norc", "--noprofile", "-c", ":"],
        }, daemon.env, rounds, warmup)
    ms = {k: v * 1e3 for k, v in medians.items()}
    ratio = ms["complete"] / ms["python"]
    figures = {**machine(), "rounds": rounds, "warmup": warmup, "queued_jobs": jobs + array,
               "complete_ms": round(ms["complete"], 2), "python_pass_ms": round(ms["python"], 2),
               "ratio": round(ratio, 2), "target_ratio": TARGET_RATIO,
               "bash_tab_ms": round(ms["bash_tab"], 2), "bash_start_ms": round(ms["bash"], 2)}
    if opts.json:
        print(json.dumps(figures))
        return 0
    print(f"gq completion benchmark, {figures['date']}; python {figures['python']}; "
          f"{figures['cores']} cores; {jobs} held jobs and a {array}-element array queued")
    print_table([
        (f"medians of {rounds} interleaved rounds after {warmup} warm-up", "", ""),
        ("gq __complete jobs cancel ''", f"{ms['complete']:.1f} ms",
         "what every Tab after `gq cancel ` runs"),
        ("python -c pass", f"{ms['python']:.1f} ms", ""),
        ("ratio", f"{ratio:.2f}x", f"target: at most {TARGET_RATIO:g}x  {verdict(ratio <= TARGET_RATIO)}"),
        ("bash: source gq.bash, complete `gq cancel `", f"{ms['bash_tab']:.1f} ms",
         "a whole Tab, with a fresh bash reading the script"),
        ("bash -c :", f"{ms['bash']:.1f} ms", ""),
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())

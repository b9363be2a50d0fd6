"""Arrays for people: one line per array in `gq ls`, in answers to cancel/hold/release and wait."""

from __future__ import annotations

from collections import Counter
from typing import Any

from gq.states import ENDED, ORDER, RUNNING, WAITING
from gq.wording.jobs import job_rows


def label(job: dict[str, Any]) -> str:
    """'12_3' for element 3 of array 12, else the job id."""
    array = job.get("array")
    return f"{array['id']}_{array['index']}" if array else str(job["id"])


def ranges(indices: list[int], limit: int | None = None, width: int = 24) -> str:
    """[0, 1, 2, 3, 7] -> '[0-3,7]', with '%N' for a limit; shortened past `width`."""
    parts: list[str] = []
    run_start = prev = None
    for i in sorted(indices):
        if prev is not None and i == prev + 1:
            prev = i
            continue
        if run_start is not None:
            parts.append(str(run_start) if run_start == prev else f"{run_start}-{prev}")
        run_start = prev = i
    if run_start is not None:
        parts.append(str(run_start) if run_start == prev else f"{run_start}-{prev}")
    text = ",".join(parts)
    if len(text) > width:
        text = text[: width - 3].rsplit(",", 1)[0] + ",..."
    return f"[{text}{'' if limit is None else f'%{limit}'}]"


def counts(states: list[str], size: int | None = None,
           ended: dict[str, int] | None = None, tally: Counter | None = None) -> str:
    """'4 running, 10 pending, 1 completed, 2 oom': `size` counts elements not listed, which
    `ended` (from the daemon) tells by outcome; what it does not tell is 'ended'. `tally`:
    the listed elements counted already (by the daemon), instead of `states`."""
    tally = Counter(states) if tally is None else Counter(tally)
    listed_n = tally.total()
    if size is not None and size > listed_n:
        unlisted = size - listed_n
        listed = Counter(tally)
        for state, n in (ended or {}).items():
            n = min(max(n - listed[state], 0), unlisted)  # those listed are counted already
            tally[state] += n
            unlisted -= n
        tally["ended"] += max(unlisted, 0)
    return ", ".join(f"{tally[s]:,} {s}" for s in (*ORDER, "ended") if tally[s])


def _array_row(group: list[dict[str, Any]], first_row: list[str], listed_all: bool) -> list[str]:
    array = group[0]["array"]
    row = list(first_row)
    line = next((j["array"]["line"] for j in group if j["array"].get("line")), None)
    if line is not None:  # the daemon counted its listed elements: one line of the array
        return _line_row(group, line, row)
    row[0] = f"{array['id']}_{ranges([j['array']['index'] for j in group], array['limit'])}"
    row[3] = counts([j["state"] for j in group], None if listed_all else array["size"],
                    array.get("ended"))
    gpus = sorted({i for j in group if j["state"] in RUNNING
                   for i in j["gpu_ids"]})
    reasons = sorted({j["reason"] for j in group if j["state"] in WAITING
                      and j["reason"]})
    where = ([f"gpu {','.join(map(str, gpus))}"] if gpus else []) + reasons
    row[-1] = "; ".join(where)
    return row


def _line_row(group: list[dict[str, Any]], line: dict[str, Any], row: list[str]) -> list[str]:
    """An array's line from the daemon's count of its listed elements (`gq ls`'s default):
    `12_[0-9999]  sweep  3 running, 9,987 pending, 8 completed, 2 oom`, as squeue folds an
    array; elements listed beside it (recently ended ones) are counted in its `ended`."""
    array = group[0]["array"]
    first, last, contiguous = line["span"]
    limit = "" if array["limit"] is None else f"%{array['limit']}"
    row[0] = f"{array['id']}_[{first}{'-' if contiguous else ',...,'}{last}{limit}]"
    row[3] = counts([], array["size"], array.get("ended"), tally=Counter(line["states"]))
    gpus = line["gpus"]
    where = ([f"gpu {','.join(map(str, gpus))}"] if gpus else []) + line["reasons"]
    row[-1] = "; ".join(where)
    return row


def table_rows(jobs: list[dict[str, Any]], with_start: bool = False, expand: bool = False,
               listed_all: bool = False) -> tuple[list[str], list[list[str]]]:
    """`gq ls`: each array folded into one line at its first element's place, unless expand."""
    headers, rows = job_rows(jobs, with_start=with_start)
    return headers, fold(jobs, rows, expand, listed_all)


def fold(jobs: list[dict[str, Any] | None], rows: list[list[str]], expand: bool = False,
         listed_all: bool = False) -> list[list[str]]:
    """Each job's cells (job_rows), with each array's folded into one line at its first
    element's place, unless expand. A job may be None where it is no array's element."""
    groups: dict[int, list[dict[str, Any]]] = {}
    for job in jobs:
        if job and job.get("array"):
            groups.setdefault(job["array"]["id"], []).append(job)
    if not groups:
        return rows
    if expand:
        for job, row in zip(jobs, rows):
            if job:
                row[0] = label(job)
        return rows
    out, done = [], set()
    for job, row in zip(jobs, rows):
        array = job and job.get("array")
        if not array:
            out.append(row)
        elif array["id"] not in done:
            done.add(array["id"])
            out.append(_array_row(groups[array["id"]], row, listed_all))
    return out


def fold_results(results: list[dict[str, Any]]) -> list[tuple[bool, str]]:
    """Answers of cancel/hold/release/requeue as (ok, line); an array named whole is one line."""
    order: list[int | dict[str, Any]] = []  # a result, or the id of an array's line
    tallies: dict[int, Counter] = {}
    for r in results:
        if "array" not in r:
            order.append(r)
            continue
        if r["array"] not in tallies:
            tallies[r["array"]] = Counter()
            order.append(r["array"])
        tallies[r["array"]][("skipped: " if r.get("skipped") else "") + r["message"]] += 1
    return [
        (item["ok"], f"job {item['id']}: {item['message']}") if isinstance(item, dict) else
        (True, f"array {item}: " + ", ".join(f"{n} {m}" for m, n in tallies[item].items()))
        for item in order
    ]


def fold_waited(jobs: list[dict[str, Any]]) -> list[str]:
    """Answers of wait: one line per job, or per array when several of its elements ended."""
    by_array = Counter(j["array"]["id"] for j in jobs if j.get("array"))
    lines, done = [], set()
    for j in jobs:
        array = j.get("array")
        if array and by_array[array["id"]] > 1:
            if array["id"] in done:
                continue
            done.add(array["id"])
            group = [g for g in jobs if (g.get("array") or {}).get("id") == array["id"]]
            codes = sorted({g["exit_code"] for g in group if g["exit_code"] not in (None, 0)})
            extra = f" (exit {','.join(map(str, codes))})" if codes else ""
            lines.append(f"array {array['id']}: {counts([g['state'] for g in group])}{extra}")
            continue
        code = j["exit_code"]
        if j.get("never_starts"):
            lines.append(f"job {label(j)}: {j['state']} ({j['reason']}), can no longer start: "
                         f"gq why {label(j)}")
        elif j["state"] not in ENDED:
            lines.append(f"job {label(j)}: still {j['state']} (--timeout ran out)")
        else:
            lines.append(f"job {label(j)}: {j['state']}"
                         + (f" (exit {code})" if code is not None else ""))
    return lines


EXIT_NEVER_STARTS, EXIT_TIMED_OUT = 3, 124


def wait_status(jobs: list[dict[str, Any]]) -> int:
    """gq wait's exit status: 0 when all completed; else the first failing job's exit code (1
    without one); 3 when a job can no longer start; 124 when --timeout ran out first."""
    if any(j["state"] not in ENDED for j in jobs):
        return EXIT_NEVER_STARTS if any(j.get("never_starts") for j in jobs) else EXIT_TIMED_OUT
    for j in jobs:
        if j["state"] != "completed":
            return j["exit_code"] if j["exit_code"] not in (None, 0) else 1
    return 0

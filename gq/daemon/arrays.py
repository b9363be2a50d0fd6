"""Arrays and sweeps in the daemon: one submit becomes many jobs, and an array id names them all.

An array's elements are ordinary jobs with consecutive ids; the array's id is its first
element's id. `12_3` names the element with index 3 of array 12. A request that acts on jobs
(cancel, hold, release, requeue, wait, and dependencies) takes an array id for all its
elements, as Slurm does; one that shows a job (show, why, logs) takes the element with that id.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterable

from gq.arrayspec import MAX_ELEMENTS
from gq.model import ArrayPart, DepKind, Job, clone
from gq.protocol import BadInput
from gq.store import Store


class Element:
    __slots__ = ("index", "command", "params")

    def __init__(self, index: int, command: list[str], params: dict[str, str]):
        self.index, self.command, self.params = index, command, params


def _indices(array: dict) -> list[int] | None:
    indices = array.get("indices")
    if indices is None:
        return None
    if (not isinstance(indices, list) or not indices
            or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0
                       for i in indices)):
        raise BadInput("--array: expected a list of indices, 0 or more")
    if len(set(indices)) != len(indices):
        raise BadInput("--array: an index is given twice")
    return indices


def _limit(array: dict) -> int | None:
    limit = array.get("limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                              or limit < 1):
        raise BadInput(f"--array %{limit}: at most how many run at once; 1 or more")
    return limit


def _sweep(sweep: Any) -> list[tuple[str, list[str]]]:
    if not isinstance(sweep, list):
        raise BadInput("--sweep: expected a list of [KEY, [VALUES]]")
    seen = set()
    for item in sweep:
        if (not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str)
                or not isinstance(item[1], list) or not item[1]
                or not all(isinstance(v, str) and v and "\0" not in v for v in item[1])
                or len(set(item[1])) != len(item[1])):
            raise BadInput("--sweep: expected KEY=VALUE,VALUE,... with different values")
        key = item[0]
        if not key.isidentifier():
            raise BadInput(f"--sweep {key}: a key is a name of letters, digits and _")
        if key in seen:
            raise BadInput(f"--sweep {key}: given twice")
        seen.add(key)
    return [(k, list(v)) for k, v in sweep]


def elements(args: dict[str, Any], command: list[str]) -> tuple[list[Element], int | None] | None:
    """The elements a submit asks for, and its limit; None for a single job."""
    array, sweep = args.get("array"), args.get("sweep")
    if array is None and not sweep:
        return None
    if array is not None and not isinstance(array, dict):
        raise BadInput("--array: expected an object")
    array = array or {}
    indices, limit = _indices(array), _limit(array)
    if sweep:
        if indices is not None:
            raise BadInput("--array with --sweep takes only a limit, e.g. --array %4: a sweep "
                           "is an array of its own")
        keys = _sweep(sweep)
        size = 1
        for _, values in keys:
            size *= len(values)
        _check_size(size)
        out = []
        for index, combo in enumerate(itertools.product(*(values for _, values in keys))):
            params = {k: v for (k, _), v in zip(keys, combo)}
            out.append(Element(index, [_fill(arg, params) for arg in command], params))
        return out, limit
    if indices is None:
        raise BadInput("--array: no indices given, e.g. --array 0-15%4")
    _check_size(len(indices))
    return [Element(i, command, {}) for i in indices], limit


def _check_size(size: int) -> None:
    if size > MAX_ELEMENTS:
        raise BadInput(f"{size} elements: at most {MAX_ELEMENTS} in one submit")


def _fill(arg: str, params: dict[str, str]) -> str:
    for key, value in params.items():
        arg = arg.replace("{" + key + "}", value)
    return arg


def insert_elements(store: Store, job: Job, parts: list[Element], limit: int | None,
                    key: str | None = None) -> list[int]:
    """Queue every element or none: one transaction."""
    jobs = []
    for e in parts:  # dataclasses.replace would cost 20 times as much, 10,000 times over
        element = clone(job)
        element.command, element.array = e.command, ArrayPart(0, e.index, len(parts), limit,
                                                              e.params)
        jobs.append(element)
    return store.insert_array(jobs, job.submitted_at, key)


def set_array_env(env: dict[str, str], job: Job) -> None:
    """GQ_ARRAY_* of the job's element; none inherited from a submitter inside an array."""
    for key in [k for k in env if k.startswith(("GQ_ARRAY_", "GQ_SWEEP_"))]:
        del env[key]
    if job.array is not None:
        env["GQ_ARRAY_ID"] = str(job.array.id)
        env["GQ_ARRAY_INDEX"] = str(job.array.index)
        env["GQ_ARRAY_SIZE"] = str(job.array.size)
        for key, value in job.array.params.items():
            env[f"GQ_SWEEP_{key.upper()}"] = value


MAX_ID = 2**63 - 1  # SQLite's largest integer: no job id is above it


def job_number(text: str) -> int | None:
    """'12' -> 12; None for anything else ('²' and '١٢' are digits to str.isdigit)."""
    if text.isascii() and text.isdigit() and int(text) <= MAX_ID:
        return int(text)
    return None


def parse_element(text: str) -> tuple[int, int] | None:
    """'12_3' -> (12, 3); None when the text is not of that form."""
    array, sep, index = text.partition("_")
    array_id, number = job_number(array), job_number(index)
    if sep and array_id is not None and number is not None:
        return array_id, number
    return None


def whole_array(store: Store, job_id: int) -> list[int] | None:
    """The elements of the array whose id this is, or None when it names no array."""
    members = store.array_members(job_id)
    return members or None


def expand_dependencies(store: Store, args: dict[str, Any], resolve) -> dict[str, Any]:
    """`--afterok 12` where 12 is an array: after all of its elements, as in Slurm."""
    out = dict(args)
    for kind in DepKind:
        ids = args.get(str(kind))
        if not isinstance(ids, list):
            continue
        expanded: list[Any] = []
        for text in ids:
            if parse_element(str(text)) is None:
                job_id = resolve(str(text), f"--{kind}")
                expanded += whole_array(store, job_id) or [job_id]
            else:
                expanded.append(resolve(str(text), f"--{kind}"))
        out[str(kind)] = [str(i) for i in dict.fromkeys(expanded)]
    return out


def select(store: Store, resolved: Iterable[tuple[str, int]]) -> tuple[list[int], set[int]]:
    """Job ids named by a request, with arrays expanded, and those that came from an array
    named whole (an action that does not apply to them skips them rather than failing)."""
    ids: list[int] = []
    whole: set[int] = set()
    direct: set[int] = set()
    for text, job_id in resolved:
        members = None if parse_element(text) else whole_array(store, job_id)
        if members:
            ids += members
            whole.update(members)
        else:
            ids.append(job_id)
            direct.add(job_id)
    return list(dict.fromkeys(ids)), whole - direct


def result(job: Job, ok: bool, message: str, from_array: set[int]) -> dict[str, Any]:
    """One job's line in the answer to cancel/hold/release/requeue."""
    if job.id not in from_array:
        return {"id": job.id, "ok": ok, "message": message}
    out = {"id": job.id, "ok": True, "message": message, "array": job.array.id}
    if not ok:
        out["skipped"] = True
    return out

"""sbatch's `-o/-e` file name patterns: `%j %J` (the job), `%A` (its array, or the job),
`%a` (its index), `%x` (name), `%u` (user), `%N` (host), `%%`; a number pads (`%4a`: 0007)."""

from __future__ import annotations

import re

_FIELD = re.compile(r"%(\d*)([jJAaxuN%])")
NO_INDEX = "4294967294"  # what sbatch writes for %a of a job that is in no array


def expand(pattern: str, job_id: int, array_id: int | None, index: int | None, name: str,
           user: str, node: str) -> str:
    values = {"j": str(job_id), "J": str(job_id),
              "A": str(array_id if array_id is not None else job_id),
              "a": str(index) if index is not None else NO_INDEX,
              "x": name, "u": user, "N": node, "%": "%"}

    def one(m: re.Match) -> str:
        value = values[m.group(2)]
        if m.group(1) and m.group(2) in "jJAa" and value.isdigit():
            return value.zfill(min(int(m.group(1)), 10))
        return value

    return _FIELD.sub(one, pattern)

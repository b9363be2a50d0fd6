"""Read job traces (Alibaba openb, Philly, gq's own CSV) into one record type for `gq sim`.

Pure parsing: the standard library plus gq.units and gq.model, which are stdlib-only. The only
IO is reading the one file. The mappings and stand-ins are explained in docs/traces.md.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from gq.model import Tier
from gq.units import parse_duration, parse_size

FORMATS = ("alibaba", "philly", "gq")

# The columns each format must have, in the order they are documented. Other columns are ignored.
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "alibaba": ("job_id", "submit_time", "duration_s", "num_gpu", "gpu_milli", "cpu_milli",
                "memory_mib", "qos"),
    "philly": ("job_id", "user", "num_gpu", "submit_time", "duration_s", "job_type"),
    "gq": ("submit_time", "duration", "gpus", "mem", "user", "priority", "cpus", "time_limit",
           "name"),
}
# gq's own format also reads these when present (pool, gpus_max and interactive: as gq submit
# --pool, --gpus MIN-MAX and --interactive; docs/governance.md).
GQ_OPTIONAL_COLUMNS = ("job_id", "ram", "pool", "gpus_max", "interactive")

# Alibaba's scheduler classes (LS, BE) say how urgent the work is; the plain Kubernetes classes
# (Guaranteed, Burstable) only say how requests relate to limits, so they get the default tier.
ALIBABA_TIERS = {"LS": Tier.HIGH, "Guaranteed": Tier.NORMAL, "Burstable": Tier.NORMAL,
                 "BE": Tier.LOW}
# The openb trace names no users: one stand-in user keeps fair share neutral (docs/traces.md).
ALIBABA_USER = "alibaba"
# Philly: jobs with a deadline are urgent, best-effort ones may wait and be preempted.
PHILLY_TIERS = {"strict": Tier.HIGH, "best": Tier.LOW}
# The Philly trace records no CPU request: a data-loader's worth per GPU, 1 for CPU-only jobs.
PHILLY_CPUS_PER_GPU = 4

SKIP_NEVER_RAN = "never ran (empty duration)"

MIB = 1 << 20


class TraceError(ValueError):
    """A trace that cannot be read; str() is 'PATH:LINE: what is wrong' (or 'PATH: ...')."""

    def __init__(self, path: str, line: int | None, reason: str):
        self.path, self.line, self.reason = path, line, reason
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {reason}")


@dataclass(frozen=True, kw_only=True)
class TraceJob:
    """One job as a trace describes it; times in seconds from the start of the trace.

    GPU memory comes one of two ways: `mem` (bytes per GPU, gq's own format) or `gpu_fraction`
    (the share of one card a single-GPU job asks for, 0 < f < 1, Alibaba), which the simulator
    turns into bytes once it knows the card. Both None: whole cards.
    """

    job_id: str
    submit_time: float
    duration: float  # how long it ran in the trace
    user: str
    gpus: int = 1  # 0 = CPU-only
    gpu_fraction: float | None = None
    mem: int | None = None  # bytes per GPU
    tier: Tier = Tier.NORMAL
    cpus: int = 1
    ram: int | None = None  # host memory, bytes
    time_limit: float | None = None
    name: str = ""
    pool: str | None = None
    gpus_max: int | None = None  # an elastic range's top; gpus is its bottom
    interactive: bool = False


@dataclass(frozen=True)
class Trace:
    """The jobs of one trace file, sorted by (submit_time, job_id), and the rows left out."""

    path: str
    format: str
    jobs: tuple[TraceJob, ...]
    skipped: dict[str, int]  # reason -> number of rows

    @property
    def rows(self) -> int:
        """Data rows in the file (header and blank lines not counted)."""
        return len(self.jobs) + sum(self.skipped.values())


def read_trace(path: str | Path, fmt: str = "auto") -> Trace:
    """Read a trace file; `fmt` is 'auto' (detect from the header) or one of FORMATS."""
    name = str(path)
    if fmt != "auto" and fmt not in FORMATS:
        raise ValueError(f"unknown trace format {fmt!r}: expected auto, {', '.join(FORMATS)}")
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            text = f.read()
    except OSError as e:
        raise TraceError(name, None, e.strerror or str(e)) from None
    except UnicodeDecodeError as e:
        raise TraceError(name, None, f"not a UTF-8 text file ({e.reason})") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next((r for r in reader if any(c.strip() for c in r)), None)
        if header is None:
            raise TraceError(name, 1, "empty file: expected a header line")
        columns = [c.strip().lower() for c in header]
        fmt = _check_header(name, reader.line_num, columns, fmt)
        parse = _PARSERS[fmt]
        index = {c: i for i, c in enumerate(columns)}
        width = len(str(text.count("\n") + 1))
        jobs: list[TraceJob] = []
        skipped: dict[str, int] = {}
        seen: dict[str, int] = {}
        for fields in reader:
            if not any(c.strip() for c in fields):
                continue  # blank line
            row = _Row(name, reader.line_num, fields, index, width)
            if len(fields) != len(columns):
                raise row.error(f"expected {len(columns)} fields as in the header, "
                                f"found {len(fields)}")
            job = parse(row)
            if isinstance(job, TraceJob):
                job_id = job.job_id
                jobs.append(job)
            else:
                job_id, reason = job
                skipped[reason] = skipped.get(reason, 0) + 1
            if job_id in seen:
                raise row.error(f"job_id: {job_id!r} is already used on line {seen[job_id]}")
            seen[job_id] = row.line
    except csv.Error as e:
        raise TraceError(name, reader.line_num, f"not valid CSV: {e}") from None
    jobs.sort(key=lambda j: (j.submit_time, j.job_id))
    return Trace(path=name, format=fmt, jobs=tuple(jobs), skipped=skipped)


def _check_header(path: str, line: int, columns: list[str], fmt: str) -> str:
    dupes = sorted({c for c in columns if columns.count(c) > 1})
    if dupes:
        raise TraceError(path, line, f"column {dupes[0]!r} appears more than once in the header")
    have = set(columns)
    if fmt != "auto":
        missing = [c for c in REQUIRED_COLUMNS[fmt] if c not in have]
        if missing:
            raise TraceError(path, line, f"{fmt} format: the header lacks {', '.join(missing)}; "
                                         f"expected {_expected(fmt)}")
        return fmt
    matches = [f for f in FORMATS if have.issuperset(REQUIRED_COLUMNS[f])]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise TraceError(path, line, f"the header fits several formats "
                                     f"({', '.join(matches)}): name one")
    expected = "; ".join(f"{f}: {_expected(f)}" for f in FORMATS)
    raise TraceError(path, line, f"unrecognised header {','.join(columns)!r}: expected the "
                                 f"columns of one of these formats; {expected}")


def _expected(fmt: str) -> str:
    return ",".join(REQUIRED_COLUMNS[fmt])


class _Row:
    """One CSV record with helpers that check a column and name it when it is wrong."""

    __slots__ = ("path", "line", "fields", "index", "width")

    def __init__(self, path: str, line: int, fields: list[str], index: dict[str, int],
                 width: int):
        self.path, self.line, self.fields, self.index, self.width = (
            path, line, fields, index, width)

    def error(self, reason: str) -> TraceError:
        return TraceError(self.path, self.line, reason)

    def fail(self, column: str, value: str, expected: str) -> TraceError:
        return self.error(f"{column}: {value!r}: {expected}")

    def has(self, column: str) -> bool:
        return column in self.index

    def text(self, column: str) -> str:
        return self.fields[self.index[column]].strip()

    def required(self, column: str) -> str:
        value = self.text(column)
        if not value:
            raise self.error(f"{column}: empty; a value is required")
        return value

    def seconds(self, column: str) -> float | None:
        """A non-negative number of seconds; None when empty."""
        value = self.text(column)
        if not value:
            return None
        try:
            number = float(value)
        except ValueError:
            raise self.fail(column, value, "expected a number of seconds") from None
        if not math.isfinite(number) or number < 0:
            raise self.fail(column, value, "expected a number of seconds, 0 or more")
        return number

    def whole(self, column: str, default: int | None = None, least: int = 0) -> int:
        value = self.text(column)
        if not value:
            if default is not None:
                return default
            raise self.error(f"{column}: empty; a value is required")
        try:
            number = int(value)
        except ValueError:
            try:  # 4.0, as spreadsheets and pandas write whole numbers
                as_float = float(value)
            except ValueError:
                as_float = math.nan
            if not as_float.is_integer():
                raise self.fail(column, value, "expected a whole number") from None
            number = int(as_float)
        if number < least:
            raise self.fail(column, value, f"expected a whole number, {least} or more")
        return number

    def choice(self, column: str, table: dict[str, Tier]) -> Tier:
        value = self.text(column)
        if value not in table:
            raise self.fail(column, value, f"expected one of {', '.join(table)}")
        return table[value]


# A parser returns the job, or (job_id, reason) for a row that is valid but left out.
_Parsed = TraceJob | tuple[str, str]


def _alibaba(row: _Row) -> _Parsed:
    job_id = row.required("job_id")
    submit_time = row.seconds("submit_time")
    if submit_time is None:
        raise row.error("submit_time: empty; a value is required")
    gpus = row.whole("num_gpu")
    milli = row.whole("gpu_milli")
    fraction = None
    if gpus > 0:
        if not 1 <= milli <= 1000:
            raise row.fail("gpu_milli", row.text("gpu_milli"),
                           "expected 1 to 1000 (thousandths of a card) for a GPU job")
        if gpus == 1 and milli < 1000:
            fraction = milli / 1000
    cpus = max(1, math.ceil(row.whole("cpu_milli") / 1000))
    ram = row.whole("memory_mib") * MIB or None  # 0 MiB: no host memory was asked for
    tier = row.choice("qos", ALIBABA_TIERS)
    duration = row.seconds("duration_s")
    if duration is None:
        return job_id, SKIP_NEVER_RAN
    return TraceJob(job_id=job_id, submit_time=submit_time, duration=duration,
                    user=ALIBABA_USER, gpus=gpus, gpu_fraction=fraction, tier=tier, cpus=cpus,
                    ram=ram)


def _philly(row: _Row) -> _Parsed:
    job_id = row.required("job_id")
    user = row.required("user")
    gpus = row.whole("num_gpu")
    submit_time = row.seconds("submit_time")
    if submit_time is None:
        raise row.error("submit_time: empty; a value is required")
    tier = row.choice("job_type", PHILLY_TIERS)
    name = row.text("model_name") if row.has("model_name") else ""
    duration = row.seconds("duration_s")
    if duration is None:
        return job_id, SKIP_NEVER_RAN
    return TraceJob(job_id=job_id, submit_time=submit_time, duration=duration, user=user,
                    gpus=gpus, tier=tier, cpus=max(1, PHILLY_CPUS_PER_GPU * gpus), name=name)


_GQ_TIERS = {t.value: t for t in Tier}


def _gq(row: _Row) -> _Parsed:
    job_id = row.text("job_id") if row.has("job_id") else ""
    job_id = job_id or f"{row.line:0{row.width}d}"  # ties on submit_time keep the file's order
    submit_time = row.seconds("submit_time")
    if submit_time is None:
        raise row.error("submit_time: empty; a value is required")
    gpus = row.whole("gpus", default=1)
    mem = _size(row, "mem")
    if mem is not None and gpus == 0:
        raise row.error("mem: GPU memory per GPU needs gpus 1 or more")
    user = row.required("user")
    priority = row.text("priority").lower() or Tier.NORMAL.value
    if priority not in _GQ_TIERS:
        raise row.fail("priority", row.text("priority"), "expected high, normal or low")
    cpus = row.whole("cpus", default=1, least=1)
    ram = _size(row, "ram") if row.has("ram") else None
    time_limit = _time_limit(row)
    name = row.text("name")
    governance = _governance(row, gpus)
    duration = row.seconds("duration")
    if duration is None:
        return job_id, SKIP_NEVER_RAN
    return TraceJob(job_id=job_id, submit_time=submit_time, duration=duration, user=user,
                    gpus=gpus, mem=mem, tier=_GQ_TIERS[priority], cpus=cpus, ram=ram,
                    time_limit=time_limit, name=name, **governance)


def _governance(row: _Row, gpus: int) -> dict:
    """The optional pool, gpus_max and interactive columns of gq's format."""
    out: dict = {}
    if row.has("pool") and row.text("pool"):
        out["pool"] = row.text("pool")
    if row.has("gpus_max") and row.text("gpus_max"):
        top = row.whole("gpus_max")
        if gpus < 1 or top < gpus:
            raise row.fail("gpus_max", row.text("gpus_max"),
                           f"expected at least gpus ({gpus}), which must be 1 or more")
        out["gpus_max"] = top if top > gpus else None
    if row.has("interactive") and row.text("interactive"):
        flag = row.text("interactive").lower()
        if flag not in ("0", "1", "true", "false", "yes", "no"):
            raise row.fail("interactive", row.text("interactive"), "expected true or false")
        out["interactive"] = flag in ("1", "true", "yes")
    return out


def _size(row: _Row, column: str) -> int | None:
    value = row.text(column)
    if not value:
        return None
    try:
        return parse_size(value)
    except ValueError as e:
        raise row.error(f"{column}: {e}") from None


def _time_limit(row: _Row) -> float | None:
    value = row.text("time_limit")
    if not value:
        return None
    try:
        float(value)
    except ValueError:
        pass
    else:  # parse_duration reads a bare number as minutes (Slurm); here it would look like seconds
        raise row.fail("time_limit", value, "give a unit, e.g. 90m or 5400s (a bare number is "
                                            "ambiguous next to columns in seconds)")
    try:
        return parse_duration(value)
    except ValueError as e:
        raise row.error(f"time_limit: {e}") from None


_PARSERS: dict[str, Callable[[_Row], _Parsed]] = {"alibaba": _alibaba, "philly": _philly,
                                                   "gq": _gq}

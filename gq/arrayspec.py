"""`--array 0-15%4` and `--sweep lr=1e-3,1e-4` as text -> the structured request. Stdlib only:
`gq submit` parses them on its light path."""

from __future__ import annotations

MAX_ELEMENTS = 10_000  # per submit; Slurm's default MaxArraySize is 1001

_ARRAY_FORM = "expected indices like 0-15, 1,3,5 or 0-30:2, and %N to run at most N at once"


def _index(spec: str, text: str) -> int:
    if not (text.isascii() and text.isdigit()):  # "١٠" and "²" are digits to Python
        raise ValueError(f"--array {spec}: {_ARRAY_FORM}")
    return int(text)


def parse_array(spec: str) -> dict:
    """'0-15%4' -> {"indices": [0..15], "limit": 4}; '%4' (with --sweep) -> indices None."""
    body, pct, limit_text = spec.strip().partition("%")
    limit = None
    if pct:
        limit = _index(spec, limit_text)
        if limit < 1:
            raise ValueError(f"--array {spec}: %{limit}: at most how many run at once; 1 or more")
    if not body:
        if not pct:
            raise ValueError(f"--array {spec!r}: {_ARRAY_FORM}")
        return {"indices": None, "limit": limit}
    ranges = []
    for part in body.split(","):
        span, colon, step_text = part.partition(":")
        first, dash, last = span.partition("-")
        start = _index(spec, first)
        end = _index(spec, last) if dash else start
        step = _index(spec, step_text) if colon else 1
        if end < start:
            raise ValueError(f"--array {spec}: the range {span} ends before it starts")
        if step < 1 or (colon and not dash):
            raise ValueError(f"--array {spec}: a step goes after a range, e.g. 0-30:2")
        ranges.append(range(start, end + 1, step))
    count = sum(len(r) for r in ranges)
    if count > MAX_ELEMENTS:
        raise ValueError(f"--array {spec}: {count} elements, at most {MAX_ELEMENTS}")
    indices = [i for r in ranges for i in r]
    if len(set(indices)) != len(indices):
        raise ValueError(f"--array {spec}: an index appears twice")
    return {"indices": indices, "limit": limit}


def parse_sweep(items: list[str]) -> list[list]:
    """['lr=1e-3,1e-4', 'bs=32,64'] -> [['lr', ['1e-3', '1e-4']], ['bs', ['32', '64']]]."""
    out: list[list] = []
    seen: set[str] = set()
    size = 1
    for item in items:
        key, eq, values_text = item.partition("=")
        values = values_text.split(",")
        if not eq or not key or not all(values):
            raise ValueError(f"--sweep {item}: expected KEY=VALUE,VALUE,... (no empty value)")
        if not key.isidentifier():
            raise ValueError(f"--sweep {item}: the key must be a name (letters, digits, _)")
        if len(set(values)) != len(values):
            raise ValueError(f"--sweep {item}: a value is given twice")
        if key in seen:
            raise ValueError(f"--sweep {key}: given twice")
        seen.add(key)
        size *= len(values)
        out.append([key, values])
    if size > MAX_ELEMENTS:
        raise ValueError(f"--sweep: {size} combinations, at most {MAX_ELEMENTS}")
    return out

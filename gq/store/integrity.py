"""Whether a database file is whole, counting the pages its WAL still holds, found without
changing a byte of the file or of its WAL.

A checkpoint on a full disk can rewrite the header (page 1, which records the size) and then
fail to extend the file: the file looks cut short while its WAL still holds every page that
is missing. So the size check takes the size from the WAL's last commit, and a page missing
from the file counts as lost only if no committed frame of the WAL holds it. The frames are
read as SQLite reads them (https://www.sqlite.org/fileformat.html#the_write_ahead_log): a
frame counts if its salts match the WAL's header and its running checksum is right.
"""

from __future__ import annotations

import sqlite3
import struct
from dataclasses import dataclass, field
from pathlib import Path

_WAL_MAGIC = (0x377F0682, 0x377F0683)  # checksums in little-endian, big-endian words
_WAL_HEADER, _FRAME_HEADER = 32, 24


@dataclass
class Wal:
    """What a WAL adds to its database: the size after its last commit, in pages (0: it
    commits nothing), and the pages its committed frames hold."""

    pages: int = 0
    holds: set[int] = field(default_factory=set)


def _checksum(data: bytes, order: str, s0: int, s1: int) -> tuple[int, int]:
    words = struct.unpack(f"{order}{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def read_wal(path: Path) -> Wal:
    """The committed frames of a WAL file; an empty Wal if there is none or it is unusable."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return Wal()
    if len(data) < _WAL_HEADER:
        return Wal()
    magic, _, page_size, _, salt1, salt2, c0, c1 = struct.unpack(">8I", data[:_WAL_HEADER])
    if magic not in _WAL_MAGIC or not 512 <= page_size <= 65536:
        return Wal()
    order = ">" if magic & 1 else "<"
    s0, s1 = _checksum(data[:24], order, 0, 0)
    if (s0, s1) != (c0, c1):
        return Wal()
    wal, pending = Wal(), set()
    step = _FRAME_HEADER + page_size
    for at in range(_WAL_HEADER, len(data) - step + 1, step):
        page, commit, f1, f2, k0, k1 = struct.unpack(">6I", data[at:at + _FRAME_HEADER])
        if (f1, f2) != (salt1, salt2):
            break
        s0, s1 = _checksum(data[at:at + 8], order, s0, s1)
        s0, s1 = _checksum(data[at + _FRAME_HEADER:at + step], order, s0, s1)
        if (s0, s1) != (k0, k1):
            break
        pending.add(page)
        if commit:  # frames count only up to the last commit
            wal.pages = commit
            wal.holds |= pending
            pending = set()
    return wal


def damage(db: Path) -> str | None:
    """What is wrong with a database file, in words; None if it looks whole. A quick_check
    finds broken structure; a file cut short at a page boundary can look whole to it, so its
    size is also checked against the size its header (or its WAL) records. The check opens the
    file read-only: it never checkpoints the WAL into a file it may find damaged."""
    try:
        with open(db, "rb") as f:
            header = f.read(100)
        size = db.stat().st_size
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    (page_size,) = struct.unpack(">H", header[16:18]) if len(header) == 100 else (0,)
    page_size = 65536 if page_size == 1 else page_size
    if header.startswith(b"SQLite format 3\0") and page_size:
        pages, valid_for = struct.unpack(">I", header[28:32])[0], header[92:96]
        if valid_for != header[24:28]:
            pages = 0  # an old SQLite wrote it: the header's size is not to be trusted
        whole = size // page_size
        if pages > whole or size % page_size:  # unless the WAL holds what the file lacks
            wal = read_wal(Path(f"{db}-wal"))
            pages = wal.pages or pages
            if any(p not in wal.holds for p in range(whole + 1, pages + 1)):
                return f"is cut short ({whole} of its {pages} pages)"
            if size % page_size and whole + 1 not in wal.holds:
                return (f"is cut short ({size} bytes, not a whole number of {page_size}-byte "
                        "pages)")
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            rows = [r[0] for r in conn.execute("PRAGMA quick_check")]
        finally:
            conn.close()
    except sqlite3.DatabaseError as e:
        return f"is damaged ({e})"
    return None if rows == ["ok"] else f"is damaged ({rows[0]})"

"""Card telemetry in the store: raw samples, one-minute rollups, and the queries on them.

Rows hold whole milliseconds, MiB and watts (see m006_telemetry); this module converts to
and from seconds and bytes, so that nothing above it sees the compact units. NULL stays None.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlite_utils import Database

MIB = 1 << 20
MINUTE_MS = 60_000


def to_mib(size: int | None) -> int | None:
    return None if size is None else (size + MIB // 2) // MIB


def from_mib(mib: int | None) -> int | None:
    return None if mib is None else mib * MIB


def to_ms(t: float) -> int:
    return int(round(t * 1000))


@dataclass(frozen=True)
class CardSample:
    card: int
    util: int | None
    mem: int | None  # bytes
    ext: int | None  # bytes held outside gq's running jobs
    temp: int | None
    power: float | None  # watts


@dataclass(frozen=True)
class JobSample:
    job_id: int
    card: int
    mem: int | None  # bytes
    util: int | None


@dataclass(frozen=True)
class Window:
    """A job's samples over a time window, all its cards together."""

    samples: int
    util_known: int
    util_mean: float | None
    mem_known: int
    mem_max: int | None  # bytes, on any one card


# The raw rows of a minute in the shape of a rollup row, so that the minute being filled can
# be read together with the minutes already rolled up.
_CARD_MINUTE_OF_RAW = """
    SELECT t / 60000 AS minute, card, count(*) AS n, count(util) AS util_n,
           coalesce(sum(util), 0) AS util_sum, max(util) AS util_max, max(mem) AS mem_max,
           CAST(round(avg(mem)) AS INTEGER) AS mem_avg, max(ext) AS ext_max,
           max(temp) AS temp_max, CAST(round(avg(power)) AS INTEGER) AS power_avg
    FROM card_samples WHERE t >= :lo AND t < :hi GROUP BY minute, card
"""
_JOB_MINUTE_OF_RAW = """
    SELECT job_id, t / 60000 AS minute, card, count(*) AS n, count(util) AS util_n,
           coalesce(sum(util), 0) AS util_sum, max(mem) AS mem_max
    FROM job_samples WHERE t >= :lo AND t < :hi {job} GROUP BY job_id, minute, card
"""


class Samples:
    """Telemetry tables of one store (the daemon's connection: it is the only writer)."""

    def __init__(self, db: Database):
        self.db = db
        self._rolled: int | None = None  # minutes before this one are rolled up

    # ---- writing ------------------------------------------------------------------------

    def write(self, t: float, cards: Iterable[CardSample], jobs: Iterable[JobSample]) -> None:
        ms = to_ms(t)
        with self.db.atomic():
            self.db.conn.executemany(
                "INSERT OR REPLACE INTO card_samples VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(ms, c.card, c.util, to_mib(c.mem), to_mib(c.ext), c.temp,
                  None if c.power is None else round(c.power)) for c in cards])
            self.db.conn.executemany(
                "INSERT OR REPLACE INTO job_samples VALUES (?, ?, ?, ?, ?)",
                [(ms, j.job_id, j.card, to_mib(j.mem), j.util) for j in jobs])

    def rolled_until(self) -> int:
        """The first minute not rolled up yet."""
        if self._rolled is None:
            row = self.db.execute("SELECT max(minute) FROM card_minutes").fetchone()
            if row[0] is not None:
                self._rolled = row[0] + 1
            else:
                first = self.db.execute("SELECT min(t) FROM card_samples").fetchone()[0]
                self._rolled = 0 if first is None else first // MINUTE_MS
        return self._rolled

    def roll_up(self, now: float) -> None:
        """Roll every minute that has ended into card_minutes and job_minutes."""
        start, end = self.rolled_until(), to_ms(now) // MINUTE_MS
        if end <= start:
            return
        bounds = {"lo": start * MINUTE_MS, "hi": end * MINUTE_MS}
        with self.db.atomic():
            self.db.execute(f"INSERT OR REPLACE INTO card_minutes {_CARD_MINUTE_OF_RAW}", bounds)
            self.db.execute("INSERT OR REPLACE INTO job_minutes "
                            + _JOB_MINUTE_OF_RAW.format(job=""), bounds)
        self._rolled = end

    def prune(self, raw_before: float, rollups_before: float) -> None:
        with self.db.atomic():
            self.db.execute("DELETE FROM card_samples WHERE t < ?", [to_ms(raw_before)])
            self.db.execute("DELETE FROM job_samples WHERE t < ?", [to_ms(raw_before)])
            minute = to_ms(rollups_before) // MINUTE_MS
            self.db.execute("DELETE FROM card_minutes WHERE minute < ?", [minute])
            self.db.execute("DELETE FROM job_minutes WHERE minute < ?", [minute])

    # ---- reading: raw -------------------------------------------------------------------

    def card_series(self, since: float, card: int | None = None) -> list[dict]:
        """Raw card samples since `since`, oldest first: at (seconds), card, utilization,
        memory_used, external_used, temperature, power_w."""
        sql = "SELECT * FROM card_samples WHERE t >= ?" + (" AND card = ?" if card is not None
                                                            else "") + " ORDER BY t, card"
        args = [to_ms(since)] + ([card] if card is not None else [])
        return [{"at": r["t"] / 1000, "card": r["card"], "utilization": r["util"],
                 "memory_used": from_mib(r["mem"]), "external_used": from_mib(r["ext"]),
                 "temperature": r["temp"], "power_w": r["power"]}
                for r in self.db.query(sql, args)]

    def job_series(self, job_id: int, since: float) -> list[dict]:
        rows = self.db.query("SELECT * FROM job_samples WHERE t >= ? AND job_id = ? "
                             "ORDER BY t, card", [to_ms(since), job_id])
        return [{"at": r["t"] / 1000, "card": r["card"], "utilization": r["util"],
                 "memory_used": from_mib(r["mem"])} for r in rows]

    def job_peaks(self, job_id: int, since: float) -> dict[int, int]:
        """The most memory the job held on each card since `since` (raw and rolled up)."""
        ms = to_ms(since)
        rows = self.db.execute(
            "SELECT card, max(mem) FROM (SELECT card, mem FROM job_samples WHERE t >= ? AND "
            "job_id = ? UNION ALL SELECT card, mem_max FROM job_minutes WHERE job_id = ? AND "
            "minute >= ?) WHERE mem IS NOT NULL GROUP BY card",
            [ms, job_id, job_id, ms // MINUTE_MS]).fetchall()
        return {card: from_mib(mem) for card, mem in rows}

    # ---- reading: by the minute ---------------------------------------------------------

    def card_minutes(self, since: float, card: int | None = None) -> list[dict]:
        """One row a card a minute since `since` (as rollup rows: sums and counts, MiB)."""
        lo, rolled = to_ms(since) // MINUTE_MS, self.rolled_until()
        where = " AND card = :card" if card is not None else ""
        sql = (f"SELECT * FROM card_minutes WHERE minute >= :lo_minute AND minute < :rolled"
               f"{where} UNION ALL SELECT * FROM ({_CARD_MINUTE_OF_RAW}) WHERE 1 {where} "
               "ORDER BY minute, card")
        args = {"lo_minute": lo, "rolled": rolled, "lo": max(lo, rolled) * MINUTE_MS,
                "hi": 1 << 62, "card": card}
        return list(self.db.query(sql, args))

    def job_minutes(self, since: float, job_id: int | None = None) -> list[dict]:
        lo, rolled = to_ms(since) // MINUTE_MS, self.rolled_until()
        where = " AND job_id = :job_id" if job_id is not None else ""
        sql = (f"SELECT * FROM job_minutes WHERE minute >= :lo_minute AND minute < :rolled"
               f"{where} UNION ALL " + _JOB_MINUTE_OF_RAW.format(job=where)
               + " ORDER BY minute, card")
        args = {"lo_minute": lo, "rolled": rolled, "lo": max(lo, rolled) * MINUTE_MS,
                "hi": 1 << 62, "job_id": job_id}
        return list(self.db.query(sql, args))

    # ---- reading: aggregates for stats ----------------------------------------------------

    def card_hours(self, since: float, until: float | None = None) -> list[dict]:
        """Per hour (since the epoch) and card: samples, known utilisation samples, their sum,
        in [since, until)."""
        lo, rolled = to_ms(since) // MINUTE_MS, self.rolled_until()
        hi = _hi(until)
        sql = (f"SELECT minute / 60 AS hour, card, sum(n) AS n, sum(util_n) AS util_n, "
               f"sum(util_sum) AS util_sum FROM (SELECT minute, card, n, util_n, util_sum FROM "
               f"card_minutes WHERE minute >= :lo_minute AND minute < :rolled AND minute < "
               f":hi_minute UNION ALL SELECT minute, card, n, util_n, util_sum FROM "
               f"({_CARD_MINUTE_OF_RAW})) GROUP BY hour, card ORDER BY hour, card")
        return list(self.db.query(sql, {"lo_minute": lo, "rolled": rolled,
                                        "lo": max(lo, rolled) * MINUTE_MS, "hi": hi,
                                        "hi_minute": -(-hi // MINUTE_MS)}))

    def idle_samples(self, since: float, thresholds: dict[str, float],
                     until: float | None = None) -> list[dict]:
        """Per job and card: how many samples fell in minutes whose known utilisation averaged
        under the idle threshold of the job's tier (thresholds: tier -> percent), in
        [since, until)."""
        lo, rolled = to_ms(since) // MINUTE_MS, self.rolled_until()
        hi = _hi(until)
        sql = (f"SELECT m.job_id, m.card, sum(m.n) AS n FROM (SELECT job_id, minute, card, n, "
               f"util_n, util_sum FROM job_minutes WHERE minute >= :lo_minute AND minute < "
               f":rolled AND minute < :hi_minute UNION ALL SELECT job_id, minute, card, n, "
               f"util_n, util_sum FROM ({_JOB_MINUTE_OF_RAW.format(job='')})) m JOIN jobs j ON "
               f"j.id = m.job_id WHERE m.util_n > 0 AND m.util_sum < m.util_n * CASE j.priority "
               f"WHEN 'high' THEN :high WHEN 'low' THEN :low ELSE :normal END "
               f"GROUP BY m.job_id, m.card ORDER BY m.job_id, m.card")
        args = {"lo_minute": lo, "rolled": rolled, "lo": max(lo, rolled) * MINUTE_MS,
                "hi": hi, "hi_minute": -(-hi // MINUTE_MS),
                **{t: thresholds.get(t, 20.0) for t in ("high", "normal", "low")}}
        return list(self.db.query(sql, args))


def _hi(until: float | None) -> int:
    """The end of a period in milliseconds; None: no end."""
    return 1 << 62 if until is None else to_ms(until)

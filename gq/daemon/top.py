"""`top`: what `gq top` draws, in one answer a second, and of the queue only what changed.

The client holds a cursor from its last answer. Each answer has the cards, the offences and
the utilisation samples taken since the client's last one; of the jobs (pending, held and
running ones, without commands and environments), those that changed since the cursor, and
the ids of all of them when any changed (the client drops the others). With nothing changed,
a queue of 5,000 jobs costs nothing; the first answer, or one after the daemon restarted or
reloaded its memory, has every job (`full`).

Of a longer queue an answer covers the first ROWS active jobs by id, and says how many more
there are (`more`): what it costs is bounded by ROWS, whatever waits (issue #38). So many
changes since the cursor that reading them would cost more than ROWS make a full answer.
"""

from __future__ import annotations

import os
from typing import Any

from gq.daemon.context import Context
from gq.daemon.gpus_op import op_gpus
from gq.daemon.listing import COLUMNS as LISTED, active_jobs, job_field, start_basis
from gq.daemon.submission import Caller
from gq.daemon.telemetry_ops import op_offenders
from gq.model import ACTIVE_STATES
from gq.protocol import BadInput

# Which daemon a cursor is from: versions start again when a daemon starts.
EPOCH = os.urandom(8).hex()
HISTORY = 300.0  # seconds of card utilisation a first answer has (the sparklines' span)
# What the queue view shows of a job: listing fields, times as whole epoch seconds.
COLUMNS = [c for c in LISTED if c not in ("exit_code", "failure", "interactive")]
ROWS = 2000  # active jobs an answer covers at most, the first by id


def op_top(daemon: Context, caller: Caller, args: dict) -> dict[str, Any]:
    version = _cursor(args.get("cursor"))
    store = daemon.store
    user = None if daemon.authority.sees_all(caller) else caller.user  # [access] queue = own
    changed = None if version is None else store.changes_since(version, limit=ROWS)
    out: dict[str, Any] = {"cursor": [EPOCH, store.version], "full": changed is None,
                           "host": daemon.hostname, "user": caller.user,
                           "backend": daemon.backend.kind, "columns": COLUMNS}
    last = store.resident.nth_listed(user, ROWS)  # the last job covered; None: all are
    if changed is None:
        jobs = active_jobs(daemon, user, page=ROWS)
        out["ids"] = [j.id for j in jobs]
    else:
        jobs = sorted((j for j in changed if (j.state in ACTIVE_STATES or j.is_stopping)
                       and j.moved_to is None
                       and (user is None or j.user == user) and (last is None or j.id <= last)),
                      key=lambda j: j.id)
        # a job that left (ended, sent to a peer) is in no change: the ids tell
        out["ids"] = ([j.id for j in active_jobs(daemon, user, page=ROWS)]
                      if store.version > version else None)
    out["more"] = max(store.resident.listed_count(user) - ROWS, 0)
    out["rows"] = [[job_field(j, c) for c in COLUMNS] for j in jobs]
    out["starts"] = {str(i): [f.start, start_basis(daemon, i)]
                     for i, f in daemon.passes.forecasts.items()
                     if daemon.passes.start_notes.get(i, (True, ""))[0]}
    out["gpus"] = op_gpus(daemon, caller, {})
    out["offenders"] = op_offenders(daemon, caller, {})
    out["points"] = _points(daemon, args.get("points_after"))
    return out


def _cursor(cursor: Any) -> int | None:
    """The version of a cursor from this daemon; None: none, or another daemon's."""
    if cursor is None:
        return None
    if (not isinstance(cursor, list) or len(cursor) != 2 or not isinstance(cursor[0], str)
            or isinstance(cursor[1], bool) or not isinstance(cursor[1], int)):
        raise BadInput(f"cursor {str(cursor)[:100]}: expected the cursor of a top answer")
    return cursor[1] if cursor[0] == EPOCH else None


def _points(daemon: Context, after: Any) -> list[list]:
    """Card samples taken after `after` (epoch seconds; None: the last HISTORY seconds), as
    [at, card, utilisation], oldest first."""
    now = daemon.clock()
    if after is not None and (isinstance(after, bool) or not isinstance(after, (int, float))
                              or not 0 <= after < 1e11):
        raise BadInput(f"points_after {str(after)[:50]}: expected epoch seconds")
    since = now - HISTORY if after is None else max(after + 0.001, now - HISTORY)
    return [[p["at"], p["card"], p["utilization"]]
            for p in daemon.store.samples.card_series(since)]

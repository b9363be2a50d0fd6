"""`gq ls`: the active jobs, the caller's recently ended ones until `gq clean`, and `--all`
windows (`--since`, `--last`)."""

from __future__ import annotations

from gq.daemon.core import Daemon
from gq.daemon.submission import Caller
from gq.daemon.views import brief_json, job_json
from gq.model import ACTIVE_STATES, ENDED_STATES, Job, JobState
from gq.protocol import BadInput
from gq.units import iso


def op_list(daemon: Daemon, caller: Caller, args: dict) -> list[dict]:
    states, user = None, args.get("user") or None
    if user is not None and not isinstance(user, str):
        raise BadInput("--user: expected a user name")
    if args.get("states"):
        try:
            if not isinstance(args["states"], list):
                raise ValueError
            states = [JobState(s) for s in args["states"]]
        except (ValueError, TypeError):
            names = ", ".join(s.value for s in JobState)
            raise BadInput(f"--state: expected one of {names}") from None
    elif not args.get("all"):
        states = ACTIVE_STATES
    user = args.get("user") or None
    if not daemon.authority.sees_all(caller):  # [access] queue = "own"
        user = caller.user
    brief = bool(args.get("brief"))  # the table of `gq ls`: no command, cwd or environment
    since, last = _window(args)
    if brief and states is ACTIVE_STATES:  # all in the store's memory: no rows to read
        active = daemon.store.queue() + daemon.store.holding_jobs()
        jobs = sorted({j.id: j for j in active if j.state in ACTIVE_STATES
                       and (user is None or j.user == user)}.values(), key=lambda j: j.id)
    else:
        jobs = daemon.store.jobs(states=states, user=user, light=brief, limit=last,
                                 ended_after=None if since is None else daemon.clock() - since)
    if states is ACTIVE_STATES and args.get("recent"):
        jobs = sorted(jobs + recently_ended(daemon, user or caller.user, brief),
                      key=lambda j: j.id)
    view = brief_json if brief else job_json
    out = [{**view(j), "expected_start": expected_start(daemon, j.id),
            "expected_start_basis": start_basis(daemon, j.id)} for j in jobs
           if j.moved_to is None]  # sent to a peer: listed there (gq ls --all-hosts)
    outcomes = daemon.store.array_outcomes(sorted({j["array"]["id"] for j in out
                                                   if j["array"]}))
    for j in out:  # the elements not listed, by how they ended: `2 oom`, not `2 ended`
        if j["array"]:
            j["array"]["ended"] = outcomes.get(j["array"]["id"], {})
    return out


def _window(args: dict) -> tuple[float | None, int | None]:
    """`gq ls --all --since DUR --last N`: seconds and a count, checked."""
    since, last = args.get("since"), args.get("last")
    if since is not None and (isinstance(since, bool) or not isinstance(since, (int, float))
                              or since < 0):
        raise BadInput(f"--since {since!r}: expected a duration like 2h")
    if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < 1):
        raise BadInput(f"--last {last!r}: expected a number of jobs, 1 or more")
    return since, last


def recently_ended(daemon: Daemon, user: str, light: bool) -> list[Job]:
    """The user's jobs that ended within [daemon] show_ended and after their last `gq clean`."""
    if not daemon.config.show_ended:
        return []
    after = max(daemon.clock() - daemon.config.show_ended, daemon.store.cleared.at(user) or 0)
    return daemon.store.jobs(states=ENDED_STATES, user=user, light=light, ended_after=after)


def op_clean(daemon: Daemon, caller: Caller, args: dict) -> dict:
    """`gq clean`: the caller's ended jobs leave `gq ls` (they stay in `gq ls --all`)."""
    cleared = len(recently_ended(daemon, caller.user, light=True))
    daemon.store.cleared.clear(caller.user, daemon.clock())
    return {"cleared": cleared}


def expected_start(daemon: Daemon, job_id: int) -> str | None:
    """When a reserved job should start; None without a reservation, or when the start rests
    on a default assumption rather than a --time or a learned run time (unknown)."""
    forecast = daemon.forecasts.get(job_id)
    known = daemon.start_notes.get(job_id, (True, ""))[0]
    return iso(forecast.start) if forecast and known else None


def start_basis(daemon: Daemon, job_id: int) -> str | None:
    """What the expected start rests on, in words ('unknown: ...' when it is not known)."""
    note = daemon.start_notes.get(job_id)
    return note[1] if note and job_id in daemon.forecasts else None

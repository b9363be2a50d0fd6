"""Jobs named in a request: an id, `@` (the caller's last), an array element (12_3), an array
standing for its elements; and the host's limits every check of a request is made against."""

from __future__ import annotations

from typing import Any, TYPE_CHECKING


from gq.daemon import arrays
from gq.daemon.submission import Caller, HostLimits
from gq.model import Job
from gq.protocol import BadInput

if TYPE_CHECKING:
    from gq.daemon.context import Context


def resolve_id(daemon: Context, caller: Caller, text: str, flag: str = "job id",
               known: set[int] | None = None) -> int:
    """'12' or '@' (the caller's last job) -> an existing job id. `known`: which of the
    request's plain ids exist, looked up at once (load_jobs); None: this one is looked up."""
    text = str(text).strip()
    if text == "@":
        last = daemon.store.last_job_id(caller.user)
        if last is None:
            raise BadInput(f"{flag} @: you have no jobs yet")
        array = daemon.store.get_job(last).array
        return last if array is None else array.id  # @ is the last submit: all of an array
    element = arrays.parse_element(text)
    if element is not None:
        job_id = daemon.store.array_element(*element)
        if job_id is None:
            raise BadInput(f"{flag} {text}: no element {element[1]} in an array {element[0]}")
        return job_id
    if not (text.isascii() and text.isdigit()):
        raise BadInput(f"{flag} {text[:100]!r}: expected a job id (a number, or @ for your "
                       "last job)")
    job_id = arrays.job_number(text)
    if job_id is None or not (job_id in known if known is not None
                              else daemon.store.existing_ids([job_id])):
        raise BadInput(f"{flag} {text[:100]}: no such job")
    if not daemon.authority.sees_all(caller):  # [access] queue = "own": others' are hidden
        if not daemon.authority.may_see(caller, daemon.store.get_job(job_id)):
            raise BadInput(f"{flag} {job_id}: no such job of yours")
    return job_id


def load_jobs(daemon: Context, caller: Caller, ids: Any,
              from_array: set[int] | None = None) -> list[Job]:
    """The jobs named, an array id standing for all its elements; `from_array` collects the
    ids of those named only through their array."""
    if not isinstance(ids, list) or not ids:
        raise BadInput("no job id given")
    texts = [str(i).strip() for i in ids]
    # Which of the plain ids exist, looked up together rather than one query each (`gq wait`
    # or `gq cancel` of a thousand ids).
    known = daemon.store.existing_ids(n for n in map(arrays.job_number, texts) if n is not None)
    resolved = [(text, resolve_id(daemon, caller, text, known=known)) for text in texts]
    selected, whole = arrays.select(daemon.store, resolved)
    if from_array is not None:
        from_array |= whole
    # Light (no command, directory or environment), waiting ones from memory: all a change of
    # state needs, and cheap for a 10,000-element array.
    found = daemon.store.light_jobs(selected)
    return [found[i] for i in selected]


def host_limits(daemon: Context) -> HostLimits:
    return HostLimits(
        name=daemon.hostname,
        cpus=daemon.config.host_cpus,
        ram=daemon.config.host_ram,
        card_memory=tuple(g.memory_total for g in daemon.cards),
        preemptible_tiers=daemon.config.preemption.preemptible,
        grace=daemon.config.preemption.grace,
        pools=daemon.config.pools,
        card_ids=tuple(g.index for g in daemon.cards),
    )

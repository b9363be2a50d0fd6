"""Who may see and act on which job: owners act on their own jobs, admins on every job.

The caller is who the kernel says is at the other end of the socket (server.peer_caller); an
admin is root, the daemon's own user, or a member of the `[access] admins` group. Everyone
sees every job unless `[access] queue = "own"`. A refusal names the owner, and is written into
the job's history and the daemon's log.
"""

from __future__ import annotations

import grp
import logging
import os
import pwd
import time
from typing import Callable

from gq.config import AccessConfig
from gq.daemon.context import Context
from gq.daemon.submission import Caller
from gq.model import Job
from gq.protocol import GqError

log = logging.getLogger("gq.daemon")

ADMIN_TTL = 30.0  # seconds a group lookup is trusted: `usermod -aG` takes effect this soon


class Authority:
    def __init__(self, access: AccessConfig, owner_uid: int | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.access = access
        self.owner_uid = os.getuid() if owner_uid is None else owner_uid
        self.clock = clock
        self._admins: dict[int, tuple[float, bool]] = {}  # uid -> (looked up at, is admin)

    def is_admin(self, caller: Caller) -> bool:
        if caller.uid in (0, self.owner_uid):
            return True
        now = self.clock()
        cached = self._admins.get(caller.uid)
        if cached is None or now - cached[0] > ADMIN_TTL:
            cached = self._admins[caller.uid] = (now, self._in_admin_group(caller.uid))
        return cached[1]

    def _in_admin_group(self, uid: int) -> bool:
        try:
            gid = grp.getgrnam(self.access.admins).gr_gid
            pw = pwd.getpwuid(uid)
        except KeyError:  # no such group, or an account that is gone
            return False
        return gid in os.getgrouplist(pw.pw_name, pw.pw_gid)

    def may_act(self, caller: Caller, job: Job) -> bool:
        return caller.uid == job.uid or self.is_admin(caller)

    def sees_all(self, caller: Caller) -> bool:
        return self.access.queue == "all" or self.is_admin(caller)

    def may_see(self, caller: Caller, job: Job) -> bool:
        return self.sees_all(caller) or caller.uid == job.uid

    def who_may(self, job: Job) -> str:
        return f"{job.user} or an admin (root or a member of group {self.access.admins})"


def require_owner(daemon: Context, caller: Caller, jobs: list[Job], action: str) -> None:
    """Refuse the whole request, recording each refusal, unless the caller may act on all."""
    refused = [job for job in jobs if not daemon.authority.may_act(caller, job)]
    if not refused:
        return
    now = daemon.clock()
    with daemon.store.relaxed():
        for job in refused:
            daemon.store.note(job.id, now, f"refused: {caller.user} (uid {caller.uid}) may not "
                                           f"{action} it")
    log.warning("refused: %s (uid %s) may not %s job(s) %s", caller.user, caller.uid, action,
                ",".join(str(j.id) for j in refused))
    job = refused[0]
    others = f" (and {len(refused) - 1} more not theirs)" if len(refused) > 1 else ""
    raise GqError(f"job {job.id} belongs to {job.user}; only {daemon.authority.who_may(job)} "
                  f"may {action} it{others}; nothing was done")

"""Who is an admin: root, the daemon's own user, or a member of the admins group.

Issue 8 (system mode) defines the same rule with `[access] admins` (default `gq-admin`); until
the two meet, this module owns the check for admin-only operations (`gq reserve`)."""

from __future__ import annotations

import grp
import os
import pwd

from gq.daemon.submission import Caller
from gq.protocol import GqError

ADMIN_GROUP = "gq-admin"


def in_group(user: str, group: str) -> bool:
    """Whether `user` is a member of `group`, as a secondary or as their primary group."""
    try:
        gid = grp.getgrnam(group).gr_gid
        pw = pwd.getpwnam(user)
    except KeyError:
        return False
    return gid in os.getgrouplist(pw.pw_name, pw.pw_gid)


def is_admin(caller: Caller, group: str = ADMIN_GROUP, owner_uid: int | None = None) -> bool:
    if caller.uid in (0, os.getuid() if owner_uid is None else owner_uid):
        return True
    return in_group(caller.user, group)


def require_admin(caller: Caller, what: str, group: str = ADMIN_GROUP) -> None:
    if not is_admin(caller, group):
        raise GqError(f"only an admin (root, the daemon's owner or a member of group {group}) "
                      f"may {what}; {caller.user} is none of these")


def group_members(group: str) -> frozenset[str]:
    """The users of a group: its listed members and those whose primary group it is."""
    try:
        entry = grp.getgrnam(group)
    except KeyError:
        return frozenset()
    users = set(entry.gr_mem)
    users |= {pw.pw_name for pw in pwd.getpwall() if pw.pw_gid == entry.gr_gid}
    return frozenset(users)

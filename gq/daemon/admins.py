"""Admin-only operations (`gq reserve`): the check, with the rule of gq/daemon/authz.py (root,
the daemon's owner, or a member of `[access] admins`), and the members of a group."""

from __future__ import annotations

import grp
import pwd

from gq.daemon.context import Context
from gq.daemon.submission import Caller
from gq.protocol import GqError


def require_admin(daemon: Context, caller: Caller, what: str) -> None:
    if not daemon.authority.is_admin(caller):
        group = daemon.config.access.admins
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

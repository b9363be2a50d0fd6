"""Who a job runs as under a system daemon: its submitter's account, looked up when it starts.

The uid is the one the kernel gave for the submitting connection (SO_PEERCRED); the primary
group, the supplementary groups and HOME are that account's, as the host's user database says
when the job starts (as `login` and Slurm's initgroups do), never the daemon's.
"""

from __future__ import annotations

import os
import pwd
import stat
from dataclasses import dataclass

from gq.daemon.layout import Layout


@dataclass(frozen=True)
class Identity:
    user: str
    uid: int
    gid: int
    groups: tuple[int, ...]  # supplementary groups, the primary one included
    home: str

    def credentials(self) -> dict:
        """What the shim drops to before it starts the job (ShimSpec fields)."""
        return {"uid": self.uid, "gid": self.gid, "groups": list(self.groups)}

    def env(self) -> dict[str, str]:
        """The account's own variables, whatever the submitting shell had."""
        return {"HOME": self.home, "USER": self.user, "LOGNAME": self.user}


class NoAccount(OSError):
    """The job's uid has no account on this host (any more)."""


def identity_of(uid: int) -> Identity:
    try:
        pw = pwd.getpwuid(uid)
    except KeyError:
        raise NoAccount(f"uid {uid} has no account on this host") from None
    groups = sorted(set(os.getgrouplist(pw.pw_name, pw.pw_gid)))
    return Identity(pw.pw_name, uid, pw.pw_gid, tuple(groups), pw.pw_dir or "/")


def prepare_user_dir(layout: Layout, who: Identity) -> None:
    """Make users/NAME, the user's own directory for job output and checkpoints.

    Created by root inside root's users/ (so nothing can be planted in it meanwhile) with its
    logs/ and checkpoints/, and only then handed to the user. An existing one is never
    entered: it must be a real directory owned by the user, or the job does not start."""
    path = layout.user_dir(who.user)
    if not layout.users.is_dir():
        layout.users.mkdir()
        layout.users.chmod(0o755)  # each user reaches their own directory in it
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != who.uid:
            raise PermissionError(f"{path} is not a directory of {who.user}'s; an admin must "
                                  "remove it") from None
        return
    for sub in ("logs", "checkpoints"):
        os.mkdir(path / sub, 0o700)
        os.chown(path / sub, who.uid, who.gid)
    os.chown(path, who.uid, who.gid)

"""A system-mode host in a temporary directory: root's daemon, real users made with useradd.

The daemon runs as root (this test process's user) with GQ_SYSTEM_ROOT pointing at a temporary
directory that stands for `/`; the users' commands run as those users, through the real CLI
and socket. Tests that use it skip, saying why, when not run as root.
"""

from __future__ import annotations

import atexit
import compileall
import grp
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.hosts import kill_processes_mentioning, wait_for

from tests.support.paths import ROOT
from gq.protocol import Connection

NEEDS_ROOT = ("needs root: the system daemon starts each job as its submitter, and the test "
              "makes its users with useradd (CI runs the suite as root)")


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip(NEEDS_ROOT)
    for tool in ("useradd", "userdel", "groupadd", "groupdel"):
        if shutil.which(tool) is None:
            pytest.skip(f"needs {tool} to make the test's users")


def _open_to_others(path: str) -> bool:
    """Whether every directory up to `path` lets other users through."""
    path = os.path.realpath(path)
    while path != "/":
        if not os.stat(path).st_mode & 0o001:
            return False
        path = os.path.dirname(path)
    return True


def _user_interpreter() -> str:
    """A Python of this version that every user can execute: this one if no closed directory
    stands above it, else the system's."""
    want = "%d.%d" % sys.version_info[:2]
    for exe in (sys.executable, f"/usr/bin/python{want}", f"/usr/local/bin/python{want}"):
        if os.path.exists(exe) and _open_to_others(exe):
            return exe
    pytest.skip(f"no Python {want} that other users can run ({sys.executable} is under a "
                "directory closed to them); install one in /usr/bin")


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)  # fast, and keeps the file's mode (every file here is 0644 or 0755)
    except OSError:
        shutil.copy2(src, dst)


def readable_copy(checkout: Path) -> Path:
    """`checkout`'s gq and this environment's site-packages, copied into a new directory under
    /tmp that every user may read; removed when the test process ends."""
    tree = Path(tempfile.mkdtemp(prefix="gq-users-py-", dir="/tmp"))
    tree.chmod(0o755)
    # With the compiled modules: the users cannot write any, and a `gq` that compiles Typer,
    # Rich and gq from source at every command takes seconds (a stale one is recompiled in
    # memory, as its source's size and time no longer match).
    skip = shutil.ignore_patterns("__editable__*", "*.pth")
    shutil.copytree(checkout / "gq", tree / "gq", ignore=skip, copy_function=_link_or_copy)
    shutil.copytree(sysconfig.get_paths()["purelib"], tree / "site", ignore=skip,
                    copy_function=_link_or_copy)
    # What this process has not imported yet (a new file replaces a linked one, never writes
    # through it).
    compileall.compile_dir(tree / "gq", quiet=1)
    for path, dirs, files in os.walk(tree):
        for d in dirs:
            os.chmod(os.path.join(path, d), 0o755)
    atexit.register(shutil.rmtree, tree, ignore_errors=True)
    return tree


_USER_TREE: str | None = None


def _user_tree() -> str:
    """This checkout's gq and this environment's site-packages, copied once per test process
    into a directory under /tmp that every user may read. The test's users cannot be trusted to
    reach the checkout itself: a clone in a 0700 directory (a home, or `mktemp -d`) is closed
    to them, and so is a virtual environment inside it."""
    global _USER_TREE
    if _USER_TREE is None:
        _USER_TREE = str(readable_copy(ROOT))
    return _USER_TREE


def user_python() -> tuple[str, str]:
    """The one way a test runs gq as another user: a Python every user can execute, and the
    PYTHONPATH that gives it this checkout's gq and its dependencies from a world-readable copy,
    wherever the checkout lives and whatever the modes of its parents."""
    exe = _user_interpreter()
    tree = _user_tree()
    return exe, f"{tree}{os.pathsep}{tree}/site"


@dataclass
class User:
    name: str
    uid: int
    gid: int
    home: str

    def groups(self) -> list[int]:
        return sorted(set(os.getgrouplist(self.name, self.gid)))


class Users:
    """Users and groups made for a test module, removed (with their processes) at the end."""

    def __init__(self) -> None:
        self.tag = f"gqt{os.getpid() % 100000}"
        self.users: list[User] = []
        self.groups: list[str] = []

    def group(self, suffix: str) -> str:
        name = f"{self.tag}{suffix}"
        subprocess.run(["groupadd", name], check=True, capture_output=True)
        self.groups.append(name)
        return name

    def user(self, suffix: str, groups: tuple[str, ...] = ()) -> User:
        name = f"{self.tag}{suffix}"
        args = ["useradd", "--create-home", "--shell", "/bin/sh", "--user-group", name]
        if groups:
            args[1:1] = ["--groups", ",".join(groups)]
        subprocess.run(args, check=True, capture_output=True)
        pw = pwd.getpwnam(name)
        user = User(name, pw.pw_uid, pw.pw_gid, pw.pw_dir)
        self.users.append(user)
        return user

    def remove(self) -> None:
        import psutil

        uids = {u.uid for u in self.users}
        for proc in psutil.process_iter(["uids"]):
            if proc.info["uids"] and proc.info["uids"].real in uids:
                try:
                    proc.kill()
                except psutil.Error:
                    pass
        for user in self.users:
            subprocess.run(["userdel", "--remove", user.name], capture_output=True)
        for name in self.groups:
            subprocess.run(["groupdel", name], capture_output=True)


@contextmanager
def two_users(ann: str, bob: str) -> Iterator[Users]:
    """Two throwaway users for a test module, `made.ann` and `made.bob` (their names end in
    these suffixes), removed with their processes at the end."""
    require_root()
    made = Users()
    try:
        made.ann, made.bob = made.user(ann), made.user(bob)
        yield made
    finally:
        made.remove()


class SystemHost:
    """A system daemon below a temporary root, and the test's users' `gq` commands."""

    def __init__(self, config: str = "", sim_gpus: str = "4x80G",
                 daemon_groups: list[int] | None = None, daemon: str = "", host: str = ""):
        # Short: the socket path must fit in 107 bytes. Open to all: it stands for `/`.
        self.root = Path(tempfile.mkdtemp(prefix="gq-", dir="/tmp"))
        self.root.chmod(0o755)
        self.python, self.pythonpath = user_python()
        self.config = self.root / "etc" / "gq" / "config.toml"
        self.config.parent.mkdir(parents=True)
        # `host`: more [host] lines, in place of the blank one (the lines below keep their
        # numbers, which `gq config show` says).
        self.config.write_text(f'[host]\ncpus = 16\n{host or chr(10)}[daemon]\n'
                               f'kill_wait = "2s"\ntick = "0.2s"\n{daemon}\n{config}')
        self.socket = self.root / "run" / "gq" / "gq.sock"
        self.state = self.root / "var" / "lib" / "gq"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GQ_")}
        self.env.update(GQ_SYSTEM_ROOT=str(self.root), PYTHONPATH=str(ROOT))
        if sim_gpus:
            self.env["GQ_SIM_GPUS"] = sim_gpus
        self.daemon_groups = daemon_groups
        self.daemon: subprocess.Popen | None = None

    # ---- the daemon, as root ----
    def start(self) -> SystemHost:
        log = open(self.root / "daemon.log", "ab")
        self.daemon = subprocess.Popen(
            [sys.executable, "-m", "gq", "daemon", "run", "--system"], env=self.env,
            stdout=log, stderr=log, start_new_session=True, cwd="/",
            extra_groups=self.daemon_groups,
        )
        wait_for(self._answers, what="the system daemon's socket")
        return self

    def _answers(self) -> bool:
        if self.daemon.poll() is not None:
            raise AssertionError(f"daemon exited: {self.daemon_log()}")
        try:
            return bool(self.call("ping"))
        except OSError:
            return False

    def daemon_log(self) -> str:
        return (self.root / "daemon.log").read_text()

    def call(self, op: str, **args):
        """A request as root (an admin)."""
        with Connection(self.socket, timeout=30) as c:
            return c.call(op, **args)

    def stop(self) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            self.daemon.wait(timeout=20)

    def close(self) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            try:  # the running ones, which have processes; the queue goes with the directory
                active = [str(j["id"]) for j in self.call("list", states=["running"])["jobs"]]
                if active:
                    self.call("cancel", ids=active)
            except (OSError, AssertionError):
                pass
        self.stop()
        kill_processes_mentioning(str(self.root))
        shutil.rmtree(self.root, ignore_errors=True)

    # ---- the users ----
    def user_env(self, user: User, **extra: str) -> dict[str, str]:
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": user.home, "USER": user.name,
               "LOGNAME": user.name, "LANG": "C.UTF-8", "GQ_SYSTEM_ROOT": str(self.root),
               "PYTHONPATH": self.pythonpath}
        env.update(extra)
        return env

    def run_as(self, user: User, argv: list[str], *, umask: int = 0o022, timeout: float = 60,
               input: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            argv, user=user.uid, group=user.gid, extra_groups=user.groups(), umask=umask,
            env=env or self.user_env(user), cwd=user.home, capture_output=True, text=True,
            timeout=timeout, input=input,
        )

    def gq(self, user: User, *args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
        proc = self.run_as(user, [self.python, "-m", "gq", *args], **kw)
        if check and proc.returncode != 0:
            raise AssertionError(f"{user.name}: gq {' '.join(args)} -> {proc.returncode}: "
                                 f"{proc.stderr}")
        return proc

    def submit(self, user: User, *args: str, **kw) -> int:
        return int(self.gq(user, "submit", *args, **kw).stdout.strip())

    def raw(self, user: User, requests: list[dict]) -> list[dict]:
        """Send request lines as they are, on one connection as `user`; the replies."""
        code = (
            "import json, socket, sys\n"
            "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile('rw')\n"
            "for line in sys.stdin:\n"
            "    f.write(line); f.flush(); print(f.readline(), end='', flush=True)\n"
        )
        lines = "".join(json.dumps(r) + "\n" for r in requests)
        proc = self.run_as(user, [self.python, "-c", code, str(self.socket)], input=lines)
        assert proc.returncode == 0, proc.stderr
        return [json.loads(line) for line in proc.stdout.splitlines()]

    def job(self, job_id: int) -> dict:
        return self.call("show", id=str(job_id))

    def wait_ended(self, job_id: int, timeout: float = 30) -> dict:
        with Connection(self.socket, timeout=timeout) as c:
            return c.call("wait", ids=[str(job_id)])[0]

    def user_file(self, user: User, *parts: str) -> Path:
        return self.state / "users" / user.name / Path(*parts)


def group_id(name: str) -> int:
    return grp.getgrnam(name).gr_gid

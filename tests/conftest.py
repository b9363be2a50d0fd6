"""The suite's fixtures and tiers. Helpers live in tests/support/ (`from tests.support.X import`).

Layout: unit/ (no daemon, no subprocess), integration/ (real daemons, processes, sshd, Slurm),
soak/ (floods, storms, fuzzing, install and demo: minutes of CPU), support/ (helpers, data).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support import examples
from tests.support.hosts import GqHost, kill_processes_mentioning

TESTS = Path(__file__).resolve().parent

# The tiers. A directory's tests get its markers: `pytest -m "not soak"` is the quick loop;
# the README's command runs everything (a test elsewhere that waits a minute for something
# outside gq, Slurm's time limit, is marked soak itself). A file may add markers for what it
# needs, and a group:
# the files of one group run on one xdist worker together, as they share a module- or
# session-wide fixture (throwaway users, one real Slurm) that must not be made twice.
DIRECTORIES: dict[str, tuple[str, ...]] = {"unit": (), "integration": (), "soak": ("soak",)}
# A soak test takes minutes, more on a loaded machine: pyproject.toml's timeout is the others'.
SOAK_TIMEOUT = 600
TIERS: dict[str, tuple[tuple[str, ...], str | None]] = {
    "soak/test_user_flood.py": (("sysmode",), "user_flood"),
    "integration/test_system_mode.py": (("sysmode",), "system_mode"),
    "soak/test_install_system.py": (("install", "sysmode"), "install_system"),
    "soak/test_install.py": (("install",), None),
    "soak/test_demo.py": (("install",), None),
    "soak/test_wheel.py": (("install",), None),
    "soak/test_top_terminal.py": (("install",), None),
    "integration/test_slurm.py": (("slurm",), "slurm"),
    "integration/test_slurm_ssh.py": (("slurm", "ssh"), "slurm"),
    "integration/test_peers.py": (("ssh",), None),
    "integration/test_ssh_channels.py": (("ssh",), None),
}


def pytest_configure(config):
    # The quick loop draws a fifth of each property test's examples (tests/support/examples.py).
    examples.quick = config.option.markexpr.replace(" ", "") == "notsoak"


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        where = Path(item.fspath).relative_to(TESTS)
        if where.parts[0] not in DIRECTORIES:
            raise pytest.UsageError(f"tests/{where}: a test belongs in unit/, integration/ or "
                                    "soak/ (tests/conftest.py's DIRECTORIES)")
        marks, group = TIERS.get(where.as_posix(), ((), None))
        for mark in (*DIRECTORIES[where.parts[0]], *marks):
            item.add_marker(getattr(pytest.mark, mark))
        if "soak" in DIRECTORIES[where.parts[0]] and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SOAK_TIMEOUT))
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
    # Longest first, so that no worker is left with a minute of Slurm or flood at the end: the
    # one Slurm's tests (a worker of their own), then the soak tests and the throwaway users'
    # (a group each), then the rest.
    first = {"slurm": 0, "soak": 1, "sysmode": 1}
    items.sort(key=lambda item: min((first.get(m.name, 2) for m in item.iter_markers()),
                                    default=2))


@pytest.fixture
def make_host():
    hosts: list[GqHost] = []
    dirs: list[str] = []

    def make(sim_gpus: str | None = "4x80G", start: bool = True, **kw) -> GqHost:
        # Short paths: a Unix socket path must fit in 107 bytes.
        d = tempfile.mkdtemp(prefix="gq-", dir="/tmp")
        dirs.append(d)
        host = GqHost(Path(d) / "home", sim_gpus, **kw)
        hosts.append(host)
        if start:
            host.start()
        return host

    yield make
    for host in hosts:
        host.close()
    for d in dirs:
        kill_processes_mentioning(d)
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def slurm_cluster():
    """One real single-node Slurm (tests/support/slurmd.py) for every Slurm test of the run:
    starting one costs seconds, and the Slurm peers of the tests share it as any logins would."""
    from tests.support.slurmd import SlurmCluster, why_not

    if why_not() is not None:
        pytest.skip(f"no Slurm here: {why_not()}")
    root = Path(tempfile.mkdtemp(prefix="gq-slurm-", dir="/tmp"))
    cluster = SlurmCluster(root)
    try:
        cluster.start()
    except RuntimeError as e:
        cluster.close()
        pytest.skip(f"the test Slurm did not start: {e}")
    yield cluster
    cluster.close()
    kill_processes_mentioning(str(root))
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def host(make_host) -> GqHost:
    """A daemon of this test's own, on four simulated 80G cards."""
    return make_host("4x80G")


class SharedDaemon:
    """This worker's shared daemon, made anew should a test leave jobs on it."""

    def __init__(self) -> None:
        self.dirs: list[str] = []
        self.host = self.fresh()

    def fresh(self) -> GqHost:
        d = tempfile.mkdtemp(prefix="gq-", dir="/tmp")
        self.dirs.append(d)
        host = GqHost(Path(d) / "home", "4x80G")
        host.start()
        return host

    def replace(self) -> None:
        self.host.close()
        self.host = self.fresh()

    def close(self) -> None:
        self.host.close()
        for d in self.dirs:
            kill_processes_mentioning(d)
            shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def _shared_daemon():
    shared = SharedDaemon()
    yield shared
    shared.close()


@pytest.fixture
def shared_host(_shared_daemon) -> GqHost:
    """One daemon (four simulated 80G cards) for every test of this worker that only needs a
    daemon to exist: refusals, reads of an empty queue. Such a test leaves it as it found it:
    it queues no job (checked after each; the next test gets a new daemon then) and changes no
    setting; one that does takes `host`."""
    yield _shared_daemon.host
    queued = _shared_daemon.host.count_jobs()
    if queued:
        _shared_daemon.replace()
        pytest.fail(f"a test queued {queued} job(s) on the shared daemon; give it `host`")

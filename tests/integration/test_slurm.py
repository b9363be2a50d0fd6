"""A Slurm cluster as a gq peer, against a real single-node Slurm (tests/support/slurmd.py): submit,
GPUs, dependencies, cancel, a timeout, a requeue, logs and the states, all through `gq`."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.hosts import GqHost, kill_processes_mentioning, wait_for
from tests.support.slurmd import why_not

pytestmark = pytest.mark.skipif(why_not() is not None, reason=f"no Slurm here: {why_not()}")


@pytest.fixture(scope="module")
def slurm_host(slurm_cluster):
    root = Path(tempfile.mkdtemp(prefix="gq-slurmhost-", dir="/tmp"))
    host = GqHost(root / "home", "2x80G")
    host.env["SLURM_CONF"] = str(slurm_cluster.conf)
    host.start()
    out = host.gq("peers", "add", "--slurm", "--name", "hpc").stdout
    assert "added hpc (Slurm on this host): Slurm" in out
    # the timeout takes Slurm a minute and more: started first, checked last
    host.timed = submit(host, "-g", "0", "-t", "1m", "--", "sleep", "600")
    yield host
    host.close()
    slurm_cluster.cancel_all()
    kill_processes_mentioning(str(root))
    shutil.rmtree(root, ignore_errors=True)


def submit(host: GqHost, *args: str) -> str:
    job = host.gq("submit", "--host", "hpc", *args).stdout.strip()
    assert job.startswith("hpc:"), job
    return job


def show(host: GqHost, job: str) -> dict:
    return json.loads(host.gq("show", job, "--json").stdout)


def state_of(host: GqHost, job: str, *states: str, timeout: float = 30) -> dict:
    def check():
        j = show(host, job)
        return j if j["state"] in states else None
    return wait_for(check, timeout, interval=0.3, what=f"{job} to be {'/'.join(states)}")


def test_submit_logs_wait_and_gq_variables(slurm_host):
    job = submit(slurm_host, "-g", "0", "--env", "GREETING=hi there", "--", "sh", "-c",
                 'echo "$GREETING $GQ_JOB_ID $GQ_RESTART_COUNT"; echo oops >&2; exit 3')
    waited = slurm_host.gq("wait", job, check=False, timeout=60)
    assert waited.returncode == 3, waited.stderr
    assert slurm_host.gq("logs", job).stdout == f"hi there {job} 0\n"
    assert slurm_host.gq("logs", "--err", job).stdout == "oops\n"
    shown = show(slurm_host, job)
    assert (shown["state"], shown["exit_code"], shown["host"]) == ("failed", 3, "hpc")
    assert shown["stdout"] == f"{slurm_host.work}/slurm-{job.split(':')[1]}.out"
    assert "SIGKILL when Slurm's KillWait has passed" in slurm_host.gq("show", job).stdout


def test_gpus_are_asked_of_slurm_and_a_job_waits_for_resources(slurm_host):
    big = submit(slurm_host, "-g", "2", "--", "sleep", "300")
    assert state_of(slurm_host, big, "running")["gpus"] == 2
    more = submit(slurm_host, "-g", "1", "--", "true")
    waiting = state_of(slurm_host, more, "pending")
    wait_for(lambda: show(slurm_host, more)["reason"] == "Resources", 20, interval=0.3,
             what="reason Resources")
    assert "resources" in slurm_host.gq("why", more).stdout
    listed = slurm_host.gq("ls", "--all-hosts").stdout
    assert big in listed and more in listed
    assert waiting["command"] == ["true"]
    slurm_host.gq("cancel", big)
    assert state_of(slurm_host, big, "cancelled")["ended_at"]
    assert state_of(slurm_host, more, "completed")["exit_code"] == 0


def test_dependencies_become_slurm_dependencies(slurm_host):
    first = submit(slurm_host, "-g", "0", "--", "sleep", "3")
    then = submit(slurm_host, "-g", "0", "--afterok", first, "--", "true")
    assert state_of(slurm_host, then, "pending")["reason"] == "Dependency"
    failing = submit(slurm_host, "-g", "0", "--", "false")
    never = submit(slurm_host, "-g", "0", "--afterok", failing, "--", "true")
    assert state_of(slurm_host, then, "completed", timeout=60)
    wait_for(lambda: show(slurm_host, never)["reason"] == "DependencyNeverSatisfied", 30,
             interval=0.3, what="reason DependencyNeverSatisfied")
    assert "can never satisfy" in slurm_host.gq("why", never).stdout
    here = slurm_host.gq("submit", "--host", "hpc", "--after", "1", "--", "true", check=False)
    assert here.returncode == 2 and "dependencies" in here.stderr


def test_hold_release_and_requeue(slurm_host):
    held = submit(slurm_host, "-g", "0", "--hold", "--", "true")
    assert state_of(slurm_host, held, "held")["reason"] == "Held"
    slurm_host.gq("release", held)
    state_of(slurm_host, held, "completed", timeout=60)
    job = submit(slurm_host, "-g", "0", "--preemptible", "--", "sh", "-c",
                 'echo "run $GQ_RESTART_COUNT"; sleep 300')
    assert state_of(slurm_host, job, "running")["preemptible"] is True
    slurm_host.gq("requeue", job)
    # Slurm lets a requeued job start again two minutes later (its BeginTime)
    again = wait_for(lambda: (j := show(slurm_host, job))["restarts"] >= 1
                     and j["state"] == "pending" and j, 30, interval=0.3, what="a restart")
    assert (again["state"], again["reason"]) == ("pending", "BeginTime")
    assert "earliest start time" in slurm_host.gq("why", job).stdout
    assert slurm_host.gq("logs", job).stdout.startswith("run 0\n")
    slurm_host.gq("cancel", job)
    assert state_of(slurm_host, job, "cancelled")


def test_what_slurm_cannot_be_asked_is_refused(slurm_host):
    proc = slurm_host.gq("submit", "--host", "hpc", "--mem", "10G", "--", "true", check=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith("gq: --mem 10G: --host hpc (a Slurm peer) gives whole GPUs")
    assert len(proc.stderr.strip().splitlines()) == 1
    proc = slurm_host.gq("update", "hpc:1", "-p", "high", check=False)
    assert proc.returncode != 0


def test_gq_top_shows_the_slurm_peer_as_a_group(slurm_host):
    import time

    from gq.tui.app import make_app

    job = submit(slurm_host, "-g", "0", "--hold", "--", "true")
    app = make_app(home=str(slurm_host.home), poll=False)
    assert list(app.sources)[1:] == ["hpc"]
    group = app.sources["hpc"].fetch(time.time())
    assert group.error is None
    row = next(r for r in group.jobs if r.id == int(job.split(":")[1]))
    assert (row.host, row.state, row.reason) == ("hpc", "held", "Held")
    app.sources["hpc"].act("cancel", ids=[row.id])
    assert state_of(slurm_host, job, "cancelled")


def test_gq_top_asks_every_host_once_per_refresh_whatever_the_number_of_peers(slurm_host):
    """Each peer's group reads its part of one `list hosts=all`: with N peers, one request per
    refresh, not N (each of which asks every peer)."""
    import time

    from gq.protocol import Connection
    from gq.tui.peer_source import peer_sources
    from gq.tui.source import DaemonSource

    asked: list[tuple[str, dict]] = []

    class Counted(Connection):
        def call(self, op, **args):
            asked.append((op, args))
            return super().call(op, **args)

    class Local(DaemonSource):
        def _connect(self):
            return Counted(self.socket_path, timeout=self.timeout)

    slurm_host.gq("peers", "add", "--slurm", "--name", "hpc2")
    try:
        job = submit(slurm_host, "-g", "0", "--hold", "--", "true")
        local = Local(str(slurm_host.home / "gq.sock"))
        sources = peer_sources(local)
        assert sorted(s.name for s in sources) == ["hpc", "hpc2"]
        asked.clear()
        now = time.time()
        groups = {s.name: s.fetch(now) for s in sources}
        assert [op for op, args in asked if op == "list"] == ["list"], asked
        assert all(g.error is None for g in groups.values()), groups
        assert int(job.split(":")[1]) in {r.id for r in groups["hpc"].jobs}
        groups = {s.name: s.fetch(now + 1) for s in sources}  # the next refresh asks again
        assert [op for op, args in asked if op == "list"] == ["list", "list"]
        slurm_host.gq("cancel", job)
    finally:
        slurm_host.gq("peers", "rm", "hpc2")



def test_a_script_keeps_its_sbatch_lines_on_the_peer_and_gqs_command_line_wins(slurm_host):
    # --ntasks=2 is refused for one host: a Slurm peer takes it, as the refusal advises
    script = slurm_host.work / "authored.sh"
    script.write_text("#!/bin/bash\n#SBATCH --ntasks=2 -c 1 -J author -t 7\n"
                      "#SBATCH -o %x-%j.log\necho \"ntasks=$SLURM_NTASKS $SLURM_JOB_NAME\"\n")
    script.chmod(0o755)
    refused = slurm_host.gq("submit", str(script), check=False)
    assert refused.returncode == 2 and "--ntasks=2" in refused.stderr
    job = submit(slurm_host, str(script))
    done = state_of(slurm_host, job, "completed", timeout=60)
    sid = job.split(":")[1]
    assert (done["name"], done["time_limit"]) == ("author", 420)
    assert done["stdout"] == f"{slurm_host.work}/author-{sid}.log"
    assert slurm_host.gq("logs", job).stdout == "ntasks=2 author\n"
    again = submit(slurm_host, "-t", "3m", "-n", "mine", str(script))
    shown = state_of(slurm_host, again, "completed", timeout=60)
    assert (shown["name"], shown["time_limit"]) == ("mine", 180)

# Last of the file: Slurm ends the job a minute and more after the module's start (it checks
# time limits every 30 s), while the tests above run. Soak: the quick loop does not wait for it.
@pytest.mark.soak
def test_the_time_limit_ends_it_as_timeout(slurm_host):
    job = state_of(slurm_host, slurm_host.timed, "timeout", timeout=150)
    assert job["time_limit"] == 60 and job["ended_at"]

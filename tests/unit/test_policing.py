"""The offender rules as a service (gq/daemon/policing.py Police), without a daemon or a process:
a store in a temporary directory, card readings built by hand, a fixed clock and a stopper that
records what it is asked. What the daemon does with the same readings is tested end to end in
tests/integration/test_offenders.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gq.config import Config
from gq.config.telemetry import Action, OffenderRules
from gq.daemon.attribution import Owner
from gq.daemon.policing import Police
from gq.daemon.telemetry import Telemetry
from gq.model import Gpu, GpuProcess, Job, JobState
from gq.store import Store

G = 1 << 30


class Stopper:
    def __init__(self, store: Store):
        self.store, self.asked = store, []

    def stop(self, job: Job, new_state: JobState, reason: str, **fields) -> None:
        self.asked.append(("stop", job.id, new_state, reason))

    def requeue_over_budget(self, job: Job, peak: int, why: str) -> None:
        self.asked.append(("requeue_over_budget", job.id, peak, why))


class Runner:
    def __init__(self):
        self.commands = []

    def run(self, argv, env, cwd, output, record) -> None:
        self.commands.append((argv, env))
        record("sent")


def police_with(tmp_path: Path, **offenders) -> tuple[Police, Store, Stopper, Runner]:
    config = Config(host_cpus=4, host_ram=None)
    config.offenders = replace(config.offenders, **offenders)
    store = Store(tmp_path / "gq.db")
    stopper, runner = Stopper(store), Runner()
    telemetry = Telemetry(store.samples, config.telemetry)
    return (Police(store, config, telemetry, stopper, runner, tmp_path, tmp_path / "notify.log"),
            store, stopper, runner)


def running_job(store: Store, mem: int, at: float = 0.0) -> Job:
    job_id = store.insert_job(Job(id=0, user="ann", uid=1000, command=["train"], cwd="/tmp",
                                  gpus=1, mem=mem), at=at)
    store.transition(job_id, JobState.RUNNING, at, started_at=at, gpu_ids=[0], holding=1)
    return store.get_job(job_id)


def card(*procs: GpuProcess) -> Gpu:
    return Gpu(0, "GPU-0", "sim", 80 * G, "0", memory_used=sum(p.used_memory for p in procs),
               utilization=90, processes=list(procs))


def reading(police: Police, store: Store, now: float, cards: list[Gpu],
            owners: dict[int, Owner]) -> None:
    holding = {j.id: j for j in store.holding_jobs()}
    police.telemetry.observe(cards, owners, holding, {}, now)
    police.sample(holding, now, cards, owners, {})


def test_an_over_budget_job_is_requeued_with_its_peak_once_it_has_offended_long_enough(tmp_path):
    rules = replace(OffenderRules(), over_budget_after=30.0,
                    actions={"over_budget": Action("requeue", after=10.0)})
    police, store, stopper, _ = police_with(tmp_path, default=rules)
    job = running_job(store, mem=10 * G)
    owners = {4242: Owner(4242, job.id, alive=True)}
    over = [card(GpuProcess(4242, 14 * G))]
    for now in (1.0, 20.0):  # seen, but not yet for over_budget_after
        reading(police, store, now, over, owners)
    assert not police.open_offences and not stopper.asked
    reading(police, store, 32.0, over, owners)  # 31 s over budget: an offender
    (row,) = police.open_offences.values()
    assert row["kind"] == "over_budget" and not stopper.asked  # its action waits `after`
    reading(police, store, 45.0, over, owners)
    (asked,) = stopper.asked
    assert asked[:3] == ("requeue_over_budget", job.id, 14 * G)
    reading(police, store, 50.0, over, owners)  # acted once, not at every reading
    assert len(stopper.asked) == 1
    assert store.offences.still_open()[0]["acted"] == "requeued"


def test_a_job_back_within_its_budget_is_not_an_offender(tmp_path):
    police, store, stopper, _ = police_with(tmp_path)
    job = running_job(store, mem=10 * G)
    owners = {4242: Owner(4242, job.id, alive=True)}
    reading(police, store, 1.0, [card(GpuProcess(4242, 14 * G))], owners)
    reading(police, store, 20.0, [card(GpuProcess(4242, 8 * G))], owners)  # back under
    reading(police, store, 60.0, [card(GpuProcess(4242, 14 * G))], owners)  # over again
    assert not police.open_offences  # its 30 s count started again at 60 s


def test_a_stray_process_is_reported_notified_and_its_offence_ends_when_it_leaves(tmp_path):
    police, store, stopper, runner = police_with(
        tmp_path, stray_after=60.0, notify="echo",
        default=replace(OffenderRules(), actions={"stray": Action("notify")}))
    owners = {777: Owner(777, None, alive=True, uid=0, command="python leak.py")}
    stray = [card(GpuProcess(777, 5 * G))]
    reading(police, store, 0.0, stray, owners)
    reading(police, store, 59.0, stray, owners)
    assert not police.open_offences
    reading(police, store, 61.0, stray, owners)
    (row,) = police.open_offences.values()
    assert (row["kind"], row["pid"]) == ("stray", 777)
    (argv, env), = runner.commands  # notified once
    assert env["GQ_OFFENCE_KIND"] == "stray" and env["GQ_PID"] == "777"
    reading(police, store, 62.0, [card()], {})  # it left the cards: the offence ends at once
    assert not police.open_offences and not store.offences.still_open()
    assert not stopper.asked  # a process outside gq is never stopped by gq


def test_open_offences_are_taken_up_again_by_a_new_police(tmp_path):
    police, store, _, _ = police_with(tmp_path, stray_after=0.0)
    owners = {777: Owner(777, None, alive=True)}
    reading(police, store, 5.0, [card(GpuProcess(777, 5 * G))], owners)
    assert police.open_offences
    again, *_ = police_with(tmp_path)  # the daemon restarted on the same store
    assert set(again.open_offences) == set(police.open_offences)

"""The daemon's job states under submit, hold, release, requeue, cancel, start and run end in any
order (issue #34 item 2): a hypothesis state machine drives the daemon's own operations
(gq/daemon/ops.py's handlers, Ending.finish) on a Daemon object built in-process, which serves
nothing and starts no process, over a real Store on a real SQLite file, and checks after every
step that no operation failed inside and that what the daemon holds in memory, its rows and a
model of the expected states all agree. A start is recorded as Starting records one once its
shim is up (the transition to running, holding); the shim itself is not started here.

Seen failing before the store kept one copy of each job: a cancelled run still holding its
cards, requeued, then cancelled twice, answered KeyError from Store.end_waiting."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from gq.config import Config
from gq.daemon.core import Daemon
from gq.daemon.layout import Layout
from gq.daemon.ops import HANDLERS
from gq.daemon.submission import Caller
from gq.gpu import open_backend
from gq.model import ENDED_STATES, Job, JobState
from gq.protocol.ops import Op
from tests.support.examples import examples

ANN = Caller(uid=1000, user="ann")
RUNNING = {JobState.RUNNING, JobState.PREEMPTING, JobState.FROZEN}


class JobStates(RuleBasedStateMachine):
    jobs = Bundle("jobs")

    def __init__(self):
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        home = Path(self.tmp.name)
        self.daemon = Daemon(Layout(home), Config(host_cpus=64, host_ram=None),
                             open_backend(home, {"GQ_SIM_GPUS": "1x80G"}), "here",
                             clock=lambda: 1000.0)
        self.model: dict[int, tuple[JobState, bool]] = {}  # id -> (state, holding)

    def teardown(self):
        self.daemon.close()
        self.tmp.cleanup()

    def _op(self, op: Op, job_id: int) -> dict:
        [result] = HANDLERS[op](self.daemon, ANN, {"ids": [str(job_id)]})
        return result

    @rule(target=jobs)
    def submit(self):
        job_id = self.daemon.store.insert_job(
            Job(id=0, user="ann", uid=1000, command=["true"], cwd="/tmp", gpus=0), at=0.0)
        self.model[job_id] = (JobState.PENDING, False)
        return job_id

    @rule(job_id=jobs)
    def hold(self, job_id):
        state, holding = self.model[job_id]
        assert self._op(Op.HOLD, job_id)["ok"] == (state in (JobState.PENDING, JobState.HELD))
        if state == JobState.PENDING:
            self.model[job_id] = (JobState.HELD, holding)

    @rule(job_id=jobs)
    def release(self, job_id):
        state, holding = self.model[job_id]
        result = self._op(Op.RELEASE, job_id)
        if state == JobState.HELD:
            assert result["ok"]
            self.model[job_id] = (JobState.PENDING, holding)

    @rule(job_id=jobs)
    def requeue(self, job_id):
        state, holding = self.model[job_id]
        result = self._op(Op.REQUEUE, job_id)
        if state in (JobState.RUNNING, JobState.FROZEN):
            assert result["ok"]
            self.model[job_id] = (JobState.PREEMPTING, holding)
        elif state in ENDED_STATES and not holding:
            assert result["ok"]
            self.model[job_id] = (JobState.PENDING, False)
        else:  # waiting, stopping, or ended with its run still holding resources
            assert not result["ok"]

    @rule(job_id=jobs)
    def cancel(self, job_id):
        state, holding = self.model[job_id]
        result = self._op(Op.CANCEL, job_id)
        assert result["ok"] == (state not in ENDED_STATES)
        if state not in ENDED_STATES:
            self.model[job_id] = (JobState.CANCELLED, holding)

    @rule(job_id=jobs)
    def start(self, job_id):
        """What a pass records of a started run (gq/daemon/starting.py)."""
        state, holding = self.model[job_id]
        if state != JobState.PENDING or holding:
            return
        self.daemon.store.transition(job_id, JobState.RUNNING, 1000.0, started_at=1000.0,
                                     gpu_ids=[], holding=1)
        self.model[job_id] = (JobState.RUNNING, True)

    @rule(job_id=jobs, code=st.sampled_from([0, 1]))
    def run_ends(self, job_id, code):
        state, holding = self.model[job_id]
        if not holding:
            return
        stopped = state in (JobState.PREEMPTING, JobState.CANCELLED)
        self.daemon.ending.finish(job_id, {"exit_code": 143 if stopped else code,
                                           "stopped": stopped, "ended_at": 1001.0})
        if state == JobState.RUNNING:
            state = JobState.COMPLETED if code == 0 else JobState.FAILED
        elif state == JobState.PREEMPTING:
            state = JobState.PENDING  # requeued (gq requeue asked it)
        self.model[job_id] = (state, False)

    @invariant()
    def memory_rows_and_model_agree(self):
        store = self.daemon.store
        for job_id, (state, holding) in self.model.items():
            [row] = store.jobs(ids=[job_id], light=True)  # read from its row
            assert row.state == state, (job_id, row.state, state)
            assert store.state(job_id) == state
            assert store.is_holding(job_id) == holding
            cached = store.cached_job(job_id)
            waiting = state in (JobState.PENDING, JobState.HELD)
            assert (cached is not None) == (waiting or holding)
            if cached is not None:
                assert cached.state == state
            assert (store.waiting_job(job_id) is not None) == waiting
            assert store.light_jobs([job_id])[job_id].state == state
        assert store.waiting_count(1000) == sum(
            s in (JobState.PENDING, JobState.HELD) for s, _ in self.model.values())
        # Listed: the active ones, and those stopping (ended, their run still holding: #34).
        listed = {i for i, (s, holding) in self.model.items()
                  if s not in ENDED_STATES or holding}
        assert set(store.resident.listed()) == listed == set(store.resident.lines("ann"))


JobStates.TestCase.settings = settings(max_examples=examples(40), stateful_step_count=20,
                                       deadline=None)
test_job_states = JobStates.TestCase


def test_a_cancelled_run_still_stopping_is_neither_requeued_nor_a_keyerror_to_cancel():
    """The sequence of issue #34 item 2: a run cancelled while its shim still holds the cards,
    then requeue, cancel, cancel."""
    states = JobStates()
    try:
        job_id = states.submit()
        states.start(job_id)
        states.cancel(job_id)
        states.requeue(job_id)
        states.cancel(job_id)
        states.cancel(job_id)
        states.memory_rows_and_model_agree()
        states.run_ends(job_id, 0)
        states.requeue(job_id)
        states.memory_rows_and_model_agree()
    finally:
        states.teardown()

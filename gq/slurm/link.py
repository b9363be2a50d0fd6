"""The link to a Slurm peer: answers the operations a gq peer's daemon would (submit, list,
show, why, log, cancel, hold, release, requeue, wait, ping) by running Slurm's commands, so
that routing (gq/daemon/peers/route.py) treats it as any other peer."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from gq import __version__
from gq.protocol import VERSION, BadInput, GqError
from gq.protocol.ops import Op, parse_op
from gq.remote.spec import Unreachable
from gq.slurm.backend import LocalSlurm, SshSlurm
from gq.slurm.nodes import gpu_nodes
from gq.slurm.poller import Tracker
from gq.slurm.states import ENDED
from gq.slurm.translate import DEP_WORD, SlurmTarget, checkpoint_dir, sbatch

LOG_CHUNK = 1 << 20
LIST_AGE = 2.0  # seconds a poll answers `ls`, `show` and `why` for
WAIT_FIRST, WAIT_MAX = 0.5, 10.0  # a `gq wait` polls at these intervals, backing off
COMMAND_TIMEOUT = 30.0  # for each command of a request without a time limit (`gq wait`)
EXTRA = ("command", "priority", "signal", "signal_before")  # what squeue does not say


def target_of(spec) -> SlurmTarget:
    options = json.loads(spec.options or "{}")
    return SlurmTarget(spec.name, options.get("partition"), options.get("account"),
                       dict(options.get("qos") or {}))


# The operations a Slurm peer does not serve, and why (docs/slurm.md): a test checks that every
# Op is either served or here.
REFUSED = {
    Op.UPDATE: "scontrol update is Slurm's own",
    Op.CONFIG: "Slurm's settings are the cluster's", Op.RELOAD: "the same",
    Op.SHUTDOWN: "Slurm is not gq's to stop", Op.CLEAN: "Slurm keeps its own history",
    Op.COMPLETE: "completion asks this host only",
    Op.SAMPLES: "what a Slurm job used is the cluster's to account for", Op.STATS: "the same",
    Op.FAIRSHARE: "Slurm's fair share is sshare's",
    Op.RESERVE: "Slurm's reservations are scontrol's", Op.UNRESERVE: "the same",
    Op.RESERVATIONS: "the same",
    Op.PEERS: "a peer's peers are not this host's", Op.PEER_ADD: "the same",
    Op.PEER_RM: "the same", Op.PEER_CHECK: "the same",
    Op.TOP: "gq top asks this host's daemon, which reads its peers' lists",
    Op.SIM_REGISTER: "a process registers on its own host's simulated cards",
}


class SlurmLink:
    """`known`: the jobs sent there before, as the daemon's store kept them (unsaved())."""

    def __init__(self, spec, known_hosts, connect_timeout: float, known: list[dict] = ()):
        self.spec = spec
        self.target = target_of(spec)
        self.backend = (SshSlurm(spec, known_hosts, connect_timeout) if spec.address
                        else LocalSlurm())
        self.tracker = Tracker(self.backend, spec.name)
        for row in known:
            self.tracker.restore(row["id"], {k: row[k] for k in EXTRA}, row["job"])
        self.info: dict[str, Any] | None = None
        self.keys: dict[str, int] = {}  # submit keys sent -> the job sbatch made
        self.tried: set[str] = set()  # submit keys sbatch was run with
        # What a Slurm peer answers; every other Op is refused (REFUSED says why).
        self.served = {
            Op.PING: self.op_ping, Op.GPUS: self.op_gpus, Op.OFFENDERS: self.op_offenders,
            Op.ESTIMATE: self.op_estimate, Op.LIST: self.op_list, Op.SHOW: self.op_show,
            Op.WHY: self.op_why, Op.LOG: self.op_log, Op.WAIT: self.op_wait,
            Op.SUBMIT: self.op_submit, Op.CANCEL: self.op_cancel, Op.HOLD: self.op_hold,
            Op.RELEASE: self.op_release, Op.REQUEUE: self.op_requeue,
        }

    def open(self, accept_new: bool = False, accepted: list | None = None) -> None:
        self.backend.open(accept_new, accepted)

    def close(self) -> None:
        self.backend.close()

    def call(self, op: str, args: dict[str, Any], timeout: float | None) -> Any:
        """`timeout` bounds each Slurm command the request runs (a `wait` runs many)."""

        handler = self.served.get(parse_op(op))
        if handler is None:
            raise BadInput(f"{self.spec.name} is a Slurm peer: `{op}` is not supported there "
                           "(docs/slurm.md)")
        try:
            return handler(args, COMMAND_TIMEOUT if timeout is None else timeout)
        except Unreachable:
            # the last poll answers for no one until one reaches Slurm again: an answer
            # from it would say the peer is up
            self.tracker.polled_at = 0.0
            raise

    def unsaved(self) -> list[dict[str, Any]]:
        """The jobs sent there that changed since the last call, as the store keeps them."""
        return [{"id": sid, **{k: self.tracker.extra[sid][k] for k in EXTRA},
                 "job": self.tracker.get(sid)} for sid in self.tracker.unsaved()]

    # ---- reads --------------------------------------------------------------------------

    def op_ping(self, args: dict, timeout: float) -> dict:
        if self.info is None:
            answer = self.backend.run(["sh", "-c", "squeue --version && id -un && hostname"],
                                      timeout=timeout)
            if answer.rc != 0:
                raise GqError(f"{self.spec.name}: Slurm's squeue does not run on "
                              f"{self.backend.where}: {answer.error_line()}")
            version, user, host = (answer.out.split("\n") + ["", "", ""])[:3]
            self.info = {"version": f"{__version__} ({version.strip()})", "protocol": VERSION,
                         "host": host.strip(), "user": user.strip(), "gpus": 0,
                         "backend": "slurm"}
        self.tracker.fresh(0.0, timeout)
        return self.info

    def op_gpus(self, args: dict, timeout: float) -> list[dict]:
        """The GPU nodes of the partition (all of the cluster's without one), from sinfo."""
        return gpu_nodes(self.backend, self.spec.name, self.target.partition, timeout)

    def op_offenders(self, args: dict, timeout: float) -> list:
        return []  # what a Slurm job wastes is the cluster's to account for (docs/slurm.md)

    def op_estimate(self, args: dict, timeout: float) -> dict:
        return {"error": "a Slurm peer takes jobs sent there by name (--host "
                         f"{self.spec.name}), not by --host any"}

    def op_list(self, args: dict, timeout: float) -> list[dict]:
        self.tracker.fresh(LIST_AGE, timeout)
        states, user = args.get("states"), args.get("user")
        jobs = sorted(self.tracker.jobs.values(), key=lambda j: j["id"])
        if states:
            jobs = [j for j in jobs if j["state"] in states]
        elif not args.get("all"):
            jobs = [j for j in jobs if j["state"] not in ENDED]
        return [j for j in jobs if not user or j["user"] == user]

    def _job(self, text: Any, timeout: float) -> dict[str, Any]:
        text = str(text).strip()
        if text == "@" and self.tracker.extra:  # the last job sent there from here
            text = str(max(self.tracker.extra))
        if not text.isdigit():
            raise BadInput(f"{self.spec.name}:{text}: expected a Slurm job id")
        sid = int(text)
        self.tracker.fresh(LIST_AGE, timeout)
        job = self.tracker.get(sid)
        if job is None:
            raise BadInput(f"{self.spec.name}:{sid}: no such job of yours in Slurm")
        return job

    def op_show(self, args: dict, timeout: float) -> dict:
        job = self._job(args.get("id"), timeout)
        return {**job, "why": self.tracker.why(job), "events": [], "usage": None,
                "score": None, "checkpoint_dir": checkpoint_dir(self.spec.name, job["id"])}

    def op_why(self, args: dict, timeout: float) -> dict:
        job = self._job(args.get("id"), timeout)
        return {"id": job["id"], "state": job["state"], "reason": job["reason"],
                "why": self.tracker.why(job), "expected_start": job["expected_start"]}

    def op_log(self, args: dict, timeout: float) -> dict:
        job = self._job(args.get("id"), timeout)
        offset = args.get("offset") or 0
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise BadInput(f"offset {offset!r}: expected a byte offset")
        path = job["stderr"] if args.get("err") else job["stdout"]
        data = self.backend.read(path, offset, LOG_CHUNK, timeout) if path else b""
        return {"id": job["id"], "state": job["state"], "reason": job["reason"],
                "data": base64.b64encode(data).decode(), "offset": offset + len(data)}

    def op_wait(self, args: dict, timeout: float) -> list[dict]:
        jobs = [self._job(i, timeout) for i in args.get("ids") or []]
        delay = WAIT_FIRST
        while True:
            current = [self.tracker.get(j["id"]) for j in jobs]
            if all(j["state"] in ENDED for j in current):
                return current
            time.sleep(delay)
            delay = min(WAIT_MAX, delay * 1.5)
            self.tracker.fresh(delay / 2, timeout)

    # ---- changes ------------------------------------------------------------------------

    def op_submit(self, args: dict, timeout: float) -> dict:
        # The key the daemon sends with every try of a submit (gq/daemon/peers/forwarding.py):
        # sbatch gets it as --comment, so that a try after a cut connection finds the job.
        # A key tried before (in this daemon's life) may have made a job since the last
        # poll: poll first. A key not tried yet can only have made a job in an earlier life
        # of the daemon, which the first poll of this one shows.
        key = args.get("idempotency_key")
        if key in self.keys:  # sent again after a cut connection: the job it made
            return self._submitted(self.keys[key], args, [], timeout)
        if key:
            if key in self.tried or not self.tracker.polls:
                self.tracker.fresh(0.0, timeout)
            made = [j for j in self.tracker.jobs.values()
                    if j["slurm"]["comment"] == f"gq:{key}"]
            if made:
                return self._submitted(made[0]["id"], args, [], timeout)
            self.tried.add(key)
        last = str(max(self.tracker.extra)) if self.tracker.extra else "@"
        args = {**args, **{k: [last if str(i) == "@" else i for i in args[k]]
                           for k in DEP_WORD if args.get(k)}}
        batch = sbatch(args, self.target)
        answer = self.backend.run(batch.argv, batch.script, timeout)
        if answer.rc != 0:
            raise BadInput(f"{self.spec.name}: sbatch refused it: {answer.error_line()}")
        sid = int(answer.out.strip().split(";")[0])
        if key:
            self.keys[key] = sid
        return self._submitted(sid, args, batch.notes, timeout)

    def _submitted(self, sid: int, args: dict, notes: list[str], timeout: float) -> dict:
        if sid not in self.tracker.extra:  # what squeue will not say of it
            self.tracker.sent(sid, {"command": list(args["command"]),
                                    "priority": str(args.get("priority") or "normal"),
                                    "signal": str(args.get("signal") or "SIGTERM"),
                                    "signal_before": args.get("signal_before")})
        self.tracker.fresh(0.0, timeout)
        job = self.tracker.get(sid)
        if job is None:
            raise GqError(f"{self.spec.name}: sbatch made job {sid}, which squeue does not show")
        return {**job, "notes": notes}

    def op_cancel(self, args: dict, timeout: float) -> list[dict]:
        return self._each(args, timeout, "scancel", [], "cancelled")

    def op_hold(self, args: dict, timeout: float) -> list[dict]:
        return self._each(args, timeout, "scontrol", ["hold"], "held")

    def op_release(self, args: dict, timeout: float) -> list[dict]:
        return self._each(args, timeout, "scontrol", ["release"], "released")

    def op_requeue(self, args: dict, timeout: float) -> list[dict]:
        return self._each(args, timeout, "scontrol", ["requeue"], "requeued")

    def _each(self, args: dict, timeout: float, command: str, words: list[str],
              done: str) -> list[dict]:
        jobs = [self._job(i, timeout) for i in args.get("ids") or []]
        results = []
        for job in jobs:
            if command == "scancel" and job["state"] in ENDED:
                results.append({"id": job["id"], "ok": False, "message": f"already {job['state']}"})
                continue
            answer = self.backend.run([command, *words, str(job["id"])], timeout=timeout)
            ok = answer.rc == 0
            results.append({"id": job["id"], "ok": ok,
                            "message": done if ok else answer.error_line()})
        self.tracker.fresh(0.0, timeout)
        return results

"""The link to a Slurm peer: answers the operations a gq peer's daemon would (submit, list,
show, why, log, cancel, hold, release, requeue, wait, ping) by running Slurm's commands, so
that routing (gq/peers/route.py) treats it as any other peer."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from gq import __version__
from gq.protocol import VERSION, BadInput, GqError
from gq.slurm.backend import LocalSlurm, SshSlurm
from gq.slurm.poller import Tracker
from gq.slurm.states import ENDED
from gq.slurm.translate import SlurmTarget, sbatch

LOG_CHUNK = 1 << 20
LIST_AGE = 2.0  # seconds a poll answers `ls`, `show` and `why` for
WAIT_FIRST, WAIT_MAX = 0.5, 10.0  # a `gq wait` polls at these intervals, backing off


def target_of(spec) -> SlurmTarget:
    options = json.loads(spec.options or "{}")
    return SlurmTarget(spec.name, options.get("partition"), options.get("account"),
                       dict(options.get("qos") or {}))


class SlurmLink:
    def __init__(self, spec, known_hosts, connect_timeout: float):
        self.spec = spec
        self.target = target_of(spec)
        self.backend = (SshSlurm(spec, known_hosts, connect_timeout) if spec.address
                        else LocalSlurm())
        self.tracker = Tracker(self.backend, spec.name)
        self.info: dict[str, Any] | None = None
        self.keys: dict[str, int] = {}  # submit keys sent -> the job sbatch made

    def open(self, accept_new: bool = False, accepted: list | None = None) -> None:
        self.backend.open(accept_new, accepted)

    def close(self) -> None:
        self.backend.close()

    def call(self, op: str, args: dict[str, Any], timeout: float | None) -> Any:
        handler = getattr(self, f"op_{op}", None)
        if handler is None:
            raise BadInput(f"{self.spec.name} is a Slurm peer: `{op}` is not supported there "
                           "(docs/slurm.md)")
        return handler(args)

    # ---- reads --------------------------------------------------------------------------

    def op_ping(self, args: dict) -> dict:
        if self.info is None:
            answer = self.backend.run(["sh", "-c", "squeue --version && id -un && hostname"])
            if answer.rc != 0:
                raise GqError(f"{self.spec.name}: Slurm's squeue does not run on "
                              f"{self.backend.where}: {answer.error_line()}")
            version, user, host = (answer.out.split("\n") + ["", "", ""])[:3]
            self.info = {"version": f"{__version__} ({version.strip()})", "protocol": VERSION,
                         "host": host.strip(), "user": user.strip(), "gpus": 0,
                         "backend": "slurm"}
        self.tracker.fresh(0.0)
        return self.info

    def op_gpus(self, args: dict) -> list:
        return []  # Slurm's cards are its own to place: sinfo shows them

    def op_offenders(self, args: dict) -> list:
        return []

    def op_estimate(self, args: dict) -> dict:
        return {"error": "a Slurm peer takes jobs sent there by name (--host "
                         f"{self.spec.name}), not by --host any"}

    def op_list(self, args: dict) -> list[dict]:
        self.tracker.fresh(LIST_AGE)
        states, user = args.get("states"), args.get("user")
        jobs = sorted(self.tracker.jobs.values(), key=lambda j: j["id"])
        if states:
            jobs = [j for j in jobs if j["state"] in states]
        elif not args.get("all"):
            jobs = [j for j in jobs if j["state"] not in ENDED]
        return [j for j in jobs if not user or j["user"] == user]

    def _job(self, text: Any) -> dict[str, Any]:
        text = str(text).strip()
        if text == "@" and self.tracker.extra:  # the last job sent there from here
            text = str(max(self.tracker.extra))
        if not text.isdigit():
            raise BadInput(f"{self.spec.name}:{text}: expected a Slurm job id")
        sid = int(text)
        self.tracker.fresh(LIST_AGE)
        job = self.tracker.get(sid)
        if job is None:
            raise BadInput(f"{self.spec.name}:{sid}: no such job of yours in Slurm")
        return job

    def op_show(self, args: dict) -> dict:
        job = self._job(args.get("id"))
        return {**job, "why": self.tracker.why(job), "events": [], "usage": None,
                "score": None, "checkpoint_dir": None}

    def op_why(self, args: dict) -> dict:
        job = self._job(args.get("id"))
        return {"id": job["id"], "state": job["state"], "reason": job["reason"],
                "why": self.tracker.why(job), "expected_start": job["expected_start"]}

    def op_log(self, args: dict) -> dict:
        job = self._job(args.get("id"))
        offset = args.get("offset") or 0
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise BadInput(f"offset {offset!r}: expected a byte offset")
        path = job["stderr"] if args.get("err") else job["stdout"]
        data = self.backend.read(path, offset, LOG_CHUNK) if path else b""
        return {"id": job["id"], "state": job["state"], "reason": job["reason"],
                "data": base64.b64encode(data).decode(), "offset": offset + len(data)}

    def op_wait(self, args: dict) -> list[dict]:
        jobs = [self._job(i) for i in args.get("ids") or []]
        delay = WAIT_FIRST
        while True:
            current = [self.tracker.get(j["id"]) for j in jobs]
            if all(j["state"] in ENDED for j in current):
                return current
            time.sleep(delay)
            delay = min(WAIT_MAX, delay * 1.5)
            self.tracker.fresh(delay / 2)

    # ---- changes ------------------------------------------------------------------------

    def op_submit(self, args: dict) -> dict:
        key = args.get("submit_key")
        if key in self.keys:  # sent again after a cut connection: the job it made
            return self._submitted(self.keys[key], [])
        if key:
            self.tracker.fresh(0.0)
            made = [j for j in self.tracker.jobs.values()
                    if j["slurm"]["comment"] == f"gq:{key}"]
            if made:
                return self._submitted(made[0]["id"], [])
        last = str(max(self.tracker.extra)) if self.tracker.extra else "@"
        args = {**args, **{k: [last if str(i) == "@" else i for i in args[k]]
                           for k in ("after", "afterok", "afternotok") if args.get(k)}}
        batch = sbatch(args, self.target)
        answer = self.backend.run(batch.argv, batch.script)
        if answer.rc != 0:
            raise BadInput(f"{self.spec.name}: sbatch refused it: {answer.error_line()}")
        sid = int(answer.out.strip().split(";")[0])
        if key:
            self.keys[key] = sid
        self.tracker.extra[sid] = {"command": list(args["command"]),
                                   "priority": str(args.get("priority") or "normal"),
                                   "signal": str(args.get("signal") or "SIGTERM"),
                                   "signal_before": args.get("signal_before")}
        return self._submitted(sid, batch.notes)

    def _submitted(self, sid: int, notes: list[str]) -> dict:
        self.tracker.fresh(0.0)
        job = self.tracker.get(sid)
        if job is None:
            raise GqError(f"{self.spec.name}: sbatch made job {sid}, which squeue does not show")
        return {**job, "notes": notes}

    def op_cancel(self, args: dict) -> list[dict]:
        return self._each(args, "scancel", [], "cancelled")

    def op_hold(self, args: dict) -> list[dict]:
        return self._each(args, "scontrol", ["hold"], "held")

    def op_release(self, args: dict) -> list[dict]:
        return self._each(args, "scontrol", ["release"], "released")

    def op_requeue(self, args: dict) -> list[dict]:
        return self._each(args, "scontrol", ["requeue"], "requeued")

    def _each(self, args: dict, command: str, words: list[str], done: str) -> list[dict]:
        jobs = [self._job(i) for i in args.get("ids") or []]
        results = []
        for job in jobs:
            if command == "scancel" and job["state"] in ENDED:
                results.append({"id": job["id"], "ok": False, "message": f"already {job['state']}"})
                continue
            answer = self.backend.run([command, *words, str(job["id"])])
            ok = answer.rc == 0
            results.append({"id": job["id"], "ok": ok,
                            "message": done if ok else answer.error_line()})
        self.tracker.fresh(0.0)
        return results

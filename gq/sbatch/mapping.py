"""The option-by-option translation of an #SBATCH block to gq's submit options (see
gq.sbatch.options for the table and the verdict sentences)."""

from __future__ import annotations

from gq.sbatch.compat import SlurmCompat
from gq.sbatch.forms import gpu_request, slurm_mem, slurm_time
from gq.sbatch.options import (CLUSTER_ONLY, ONE_HOST, ONE_TASK, REFUSED, WARNED, Understood,
                               Verdict)

# sbatch's kind -> gq's: sbatch's `after` is after the start, gq's `--after` after the end
_DEP_KINDS = {"afterok": "afterok", "afterany": "after", "afternotok": "afternotok",
              "after": "afterstart"}
_MAIL_END = {"END", "FAIL", "ALL", "REQUEUE", "TIME_LIMIT", "INVALID_DEPEND"}


def _mib(n: int) -> str:
    return f"{n / (1 << 30):g}G" if n % (1 << 30) == 0 else f"{n // (1 << 20)}M"


class Mapper:
    def __init__(self, u: Understood, compat: SlurmCompat, user: str | None,
                 account: str | None):
        self.u, self.compat, self.user, self.account = u, compat, user, account
        self.last: dict[str, tuple[int, str | None, str]] = {}  # later wins

    def say(self, line: int, written: str, kind: str, says: str) -> None:
        self.u.verdicts.append(Verdict(line, written, kind, says))

    def option(self, line: int, name: str | None, value: str | None, written: str) -> None:
        if name is None:
            self.say(line, written, "refused", "not an sbatch option gq knows; check its "
                     "spelling (sbatch --help) or remove the line")
        elif name in WARNED:
            self.say(line, written, "warned", CLUSTER_ONLY)
        elif name in REFUSED:
            self.say(line, written, "refused", REFUSED[name])
        else:
            if name in self.last:  # the earlier one is overridden
                old = self.last[name]
                self.say(old[0], old[2], "mapped", f"overridden by line {line}")
            self.last[name] = (line, value, written)

    def finish(self) -> None:
        for name, (line, value, written) in self.last.items():
            try:
                says, kind = getattr(self, "_" + name.replace("-", "_"))(value), "mapped"
            except _Refused as e:
                says, kind = str(e), "refused"
            except _Warned as e:
                says, kind = str(e), "warned"
            except ValueError as e:
                says, kind = str(e), "refused"
            self.say(line, written, kind, says)
        self.u.verdicts.sort(key=lambda v: v.line)
        if "gpus" not in self.u.values:
            self.u.values["gpus"] = str(self.compat.default_gpus)
        self.u.job["sbatch"] = True

    # counts the rest depends on
    def _count(self, name: str) -> int | None:
        entry = self.last.get(name)
        if entry is None:
            return None
        number = entry[1] or ""
        if not (number.isascii() and number.isdigit()):
            return None
        return int(number)

    def _gpus_asked(self) -> int | None:
        if "gpus" in self.u.values:
            return int(self.u.values["gpus"])
        for name in ("gres", "gpus", "gpus-per-node", "gpus-per-task"):
            entry = self.last.get(name)
            if entry and entry[1]:
                try:
                    return gpu_request(entry[1], gres=name == "gres")[1]
                except ValueError:
                    return None
        return None

    def _whole(self, value: str | None, what: str) -> int:
        if not (value and value.isascii() and value.isdigit()):
            raise ValueError(f"expected a whole number of {what}")
        return int(value)

    # one method per option: what gq understood, or an exception saying why not
    def _job_name(self, v):
        self.u.values["name"] = v
        return f"the job's name: {v}"

    def _cpus_per_task(self, v):
        n = self._whole(v, "cores")
        self.u.values["cpus"] = str(n)
        return f"{n} CPU core{'s' * (n != 1)} (gq -c {n})"

    def _ram(self, total: int | None, how: str):
        if "ram" in self.u.job:
            raise _Refused("give one of --mem, --mem-per-cpu and --mem-per-gpu, as sbatch asks")
        self.u.job["ram"] = how
        if total is None:
            return "all of the host's memory: gq sets no host-memory limit"
        self.u.values["ram"] = _mib(total)
        return f"{_mib(total)} of host memory (gq --ram {_mib(total)}; gq's --mem is GPU memory)"

    def _mem(self, v):
        return self._ram(slurm_mem(v or ""), "mem")

    def _mem_per_cpu(self, v):
        per = slurm_mem(v or "")
        cpus = self._count("cpus-per-task") or 1
        return self._ram(None if per is None else per * cpus, "mem-per-cpu") + \
            f", for {cpus} core{'s' * (cpus != 1)}"

    def _mem_per_gpu(self, v):
        per = slurm_mem(v or "")
        gpus = self._gpus_asked()
        if not gpus:
            raise _Refused("asks memory per GPU of a job that asks for no GPU; add --gres=gpu:N")
        return self._ram(None if per is None else per * gpus, "mem-per-gpu") + \
            f", for {gpus} GPU{'s' * (gpus != 1)}"

    def _set_gpus(self, kind: str, n: int) -> str:
        if "gpus_from" in self.u.job and self.u.values.get("gpus") != str(n):
            raise _Refused(f"asks {n} GPUs where {self.u.job['gpus_from']} asks "
                           f"{self.u.values['gpus']}; keep one")
        self.u.job["gpus_from"] = kind
        self.u.values["gpus"] = str(n)
        return f"{n} GPU{'s' * (n != 1)} (gq -g {n})"

    def _typed(self, kind: str, v: str, gres: bool) -> str:
        gpu_type, n = gpu_request(v or "", gres)
        says = self._set_gpus(kind, n)
        if gpu_type:
            raise _Warned(f"{says}; gq does not choose cards by type, so any of this host's "
                          f"cards ({gpu_type} ignored; a [pools] pool of them with --pool does)")
        return says

    def _gres(self, v):
        return self._typed("--gres", v, True)

    def _gpus(self, v):
        return self._typed("--gpus", v, False)

    def _gpus_per_node(self, v):
        return self._typed("--gpus-per-node", v, False)

    def _gpus_per_task(self, v):
        return self._typed("--gpus-per-task", v, False) + " (one task)"

    def _cpus_per_gpu(self, v):
        per = self._whole(v, "cores")
        gpus = self._gpus_asked() or 1
        self.u.values["cpus"] = str(per * gpus)
        return f"{per * gpus} CPU cores ({per} for each of {gpus} GPU{'s' * (gpus != 1)})"

    def _time(self, v):
        seconds = slurm_time(v or "")
        if seconds is None:
            return "no time limit"
        self.u.values["time"] = f"{int(seconds)}s"
        from gq.units import format_duration

        return f"a time limit of {format_duration(seconds)} (gq -t {int(seconds)}s)"

    def _array(self, v):
        from gq.arrayspec import parse_array

        spec = parse_array(v or "")
        if spec["indices"] is None:
            raise _Refused("expected indices like 0-15 or 1,3,5, and %N")
        self.u.values["array"] = v
        self.u.job["array"] = {"min": min(spec["indices"]), "max": max(spec["indices"]),
                               "count": len(spec["indices"]), "step": _step(v)}
        limit = f", at most {spec['limit']} at once" if spec["limit"] else ""
        return f"an array of {len(spec['indices'])} elements{limit} (gq --array {v})"

    def _output(self, v):
        self.u.job["output"] = v
        return f"standard output to {v} (gq logs ID reads it)" + (
            "" if "error" in self.last else ", standard error too (no -e), as sbatch")

    def _error(self, v):
        self.u.job["error"] = v
        return f"standard error to {v}"

    def _chdir(self, v):
        self.u.values["cwd"] = v
        return f"runs in {v} (gq --cwd)"

    def _dependency(self, v):
        text = v or ""
        if "?" in text:
            raise _Refused("gq has no either-or dependencies; use ',' (all of them)")
        for part in text.split(","):
            kind, _, ids = part.partition(":")
            if kind == "singleton":
                raise _Refused("gq has no singleton dependency; use --afterany:ID of the "
                               "earlier job, or remove the line")
            if kind not in _DEP_KINDS or not ids or "+" in ids:
                raise _Refused("expected after, afterok, afterany or afternotok:ID[:ID]")
            self.u.values.setdefault(_DEP_KINDS[kind], []).append(",".join(ids.split(":")))
        return "waits for " + ", ".join(f"--{k} {','.join(self.u.values[k])}"
                                         for k in _DEP_KINDS.values() if k in self.u.values)

    def _signal(self, v):
        from gq.units import parse_signal

        text = v or ""
        batch = text.startswith("B:")
        sig, at, secs = text[2 if batch else 0:].partition("@")
        sig = parse_signal(sig)
        before = self._whole(secs, "seconds") if at else 60
        self.u.values["signal"] = f"{sig}@{before}s"
        self.u.job["signal_scope"] = "batch" if batch else "steps"
        if batch:
            return f"{sig} to the batch shell, {before}s before the time limit (and on preemption)"
        return (f"{sig} to the script's processes (not the batch shell itself), {before}s "
                "before the time limit (and on preemption)")

    def _requeue(self, v):
        return "gq requeues a job stopped for other work (it is the default)"

    def _no_requeue(self, v):
        self.u.values["no_preemptible"] = True
        return "never stopped for other work, so never requeued (gq --no-preemptible)"

    def _mail_type(self, v):
        kinds = {k.strip().upper() for k in (v or "").split(",")}
        if kinds == {"NONE"}:
            return "no mail"
        who = self.last.get("mail-user", (0, self.user, ""))[1] or self.user
        if not kinds & _MAIL_END:
            raise _Warned("gq mails only when a job ends (END, FAIL, ALL); no mail is sent")
        self.u.values["mail"] = who
        return f"mail to {who} when the job ends (gq --mail)"

    def _mail_user(self, v):
        if "mail-type" not in self.last:
            raise _Warned("without --mail-type sbatch sends no mail, nor does gq")
        return f"mail goes to {v}"

    def _export(self, v):
        text = v or "ALL"
        self.u.job["export"] = text
        if text.upper() == "ALL":
            return "the job gets your environment (as gq does)"
        if text.upper() == "NONE":
            return "the job gets a clean environment (no variables of yours but the login's)"
        return f"the job's environment: {text}"

    def _hold(self, v):
        self.u.values["hold"] = True
        return "queued held (gq --hold)"

    def _partition(self, v):
        pool = self.compat.partitions.get(v or "")
        if pool is None:
            raise _Warned("the default pool: no pool is named for it in config.toml "
                          "([slurm_compat] partitions = {NAME = \"POOL\"})")
        if pool != "default":
            self.u.values["pool"] = pool
        return f"pool {pool} ([slurm_compat] partitions)"

    def _qos(self, v):
        tier = self.compat.qos.get(v or "")
        if tier is None:
            raise _Warned("tier normal: no tier is named for it in config.toml "
                          "([slurm_compat] qos = {NAME = \"high\"}), or use gq -p")
        self.u.values["priority"] = tier
        return f"tier {tier} ([slurm_compat] qos)"

    def _account(self, v):
        if self.account is None:
            raise _Warned("gq has no accounts here; ignored")
        if v != self.account:
            raise _Warned(f"gq counts your jobs in account {self.account}, not {v}")
        return f"account {v}, yours in gq"

    def _one(self, v, what: str, refusal: str):
        if self._whole(v, what) != 1:
            raise _Refused(refusal)
        return f"one {what[:-1]}, as gq runs every job"

    def _nodes(self, v):
        if v and v.startswith("1-"):
            v = "1"
        return self._one(v, "nodes", ONE_HOST)

    def _ntasks(self, v):
        return self._one(v, "tasks", ONE_TASK)

    def _ntasks_per_node(self, v):
        return self._one(v, "tasks", ONE_TASK)

    def _ntasks_per_gpu(self, v):
        return self._one(v, "tasks", ONE_TASK)

    def _open_mode(self, v):
        if (v or "").lower() not in ("append", "truncate"):
            raise ValueError("expected append or truncate")
        self.u.job["open_mode"] = v.lower()
        if v.lower() == "truncate":
            raise _Warned("gq appends to the -o/-e files (as sbatch does for a requeued job); "
                          "remove an old one first to start it afresh")
        return "-o/-e files appended to"


class _Refused(Exception):
    pass


class _Warned(Exception):
    pass


def _step(spec: str) -> int | None:
    body = spec.partition("%")[0]
    if "," in body:
        return None
    return int(body.partition(":")[2] or 1) if "-" in body else None

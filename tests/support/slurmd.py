"""A real single-node Slurm (Debian's slurm-wlm and munge) in a temporary directory, for the
Slurm peer's tests: munged, slurmctld and slurmd started as root with a fake `gpu` gres of
two dummy device files, stopped by close(). No accounting (no slurmdbd): see docs/slurm.md."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue")


def why_not() -> str | None:
    """Why this machine cannot run the cluster, or None."""
    if os.geteuid() != 0:
        return "the Slurm tests start munged, slurmctld and slurmd, which needs root"
    missing = [d for d in DAEMONS if shutil.which(d) is None]
    if missing:
        return (f"{', '.join(missing)} not installed (apt-get install slurm-wlm munge, as "
                ".ci/run does)")
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlurmCluster:
    def __init__(self, root: Path, cpus: int = 4, gpus: int = 2):
        self.root, self.node = root, socket.gethostname().split(".")[0]
        self.conf = root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.pids: list[Path] = []
        self.ctld_port = _free_port()
        for d in ("state", "spool", "log", "munge"):
            (root / d).mkdir(parents=True, exist_ok=True)
        os.chmod(root / "munge", 0o700)
        key = root / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        for i in range(gpus):
            (root / f"gpu{i}").touch()
        (root / "gres.conf").write_text("AutoDetect=off\n" + "".join(
            f"Name=gpu File={root}/gpu{i}\n" for i in range(gpus)))
        self.conf.write_text(f"""ClusterName=gqtest
SlurmctldHost={self.node}
SlurmUser=root
SlurmctldPort={self.ctld_port}
SlurmdPort={_free_port()}
AuthType=auth/munge
AuthInfo=socket={root}/munge/munge.socket.2
CryptoType=crypto/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,bf_interval=1
MinJobAge=300
KillWait=2
InactiveLimit=0
ReturnToService=2
SlurmdParameters=config_overrides
NodeName={self.node} CPUs={cpus} RealMemory=2000 Gres=gpu:{gpus} State=UNKNOWN
PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP
""")

    def start(self) -> None:
        r = self.root
        self._run(["munged", "--force", f"--key-file={r}/munge.key",
                   f"--socket={r}/munge/munge.socket.2", f"--pid-file={r}/munge/munged.pid",
                   f"--seed-file={r}/munge/seed", f"--log-file={r}/log/munge.log"],
                  r / "munge" / "munged.pid")
        self._run(["slurmctld", "-f", str(self.conf)], r / "slurmctld.pid")
        self._run(["slurmd", "-f", str(self.conf)], r / "slurmd.pid")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            out = subprocess.run(["sinfo", "--noheader", "-o", "%t"], env=self.env,
                                 capture_output=True, text=True).stdout.strip()
            if out.startswith("idle"):
                return
            time.sleep(0.2)
        raise RuntimeError(f"the Slurm node did not come up (sinfo: {out!r}); see {r}/log")

    def _run(self, argv: list[str], pid_file: Path) -> None:
        done = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise RuntimeError(f"{argv[0]} did not start: {done.stderr.strip()}")
        self.pids.append(pid_file)

    def cancel_all(self) -> None:
        """Cancel every job (a test module's leftovers, before the next module's tests)."""
        subprocess.run(["scancel", "--user=root"], env=self.env, capture_output=True)

    def slurmctld(self) -> int:
        return int((self.root / "slurmctld.pid").read_text())

    def close(self) -> None:
        """Stop the daemons this cluster started (by their pid files), slurmd first."""
        self.cancel_all()
        for pid_file in reversed(self.pids):
            try:
                pid = int(pid_file.read_text())
                os.kill(pid, 15)
            except (OSError, ValueError):
                continue
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except OSError:
                    break
                time.sleep(0.05)

"""How long a job will run, learned from the ended runs of the same fingerprint (EASY++'s rule).

A fingerprint is (user, program, script, GPUs): the program's name and, for an interpreter or
launcher (python, bash, torchrun...), the script or module it runs; other arguments are not
part of it, so that the runs of a sweep teach each other. The prediction is the mean of the last
two completed runs of the fingerprint (the one run, after one). A job that outlives its
prediction is predicted to run twice as long, again and again, never past its --time (so the
plan is corrected: a longer prediction, then the declared limit). With no completed run there
is no prediction: "unknown", never a default passed off as one.

The scheduler plans with the smaller of a job's --time and its prediction (EASY++, Tsafrir et
al. 2007: SchedulerInput.run_time_of): forecasts, reservations and backfill.

Pure: the daemon, `gq sim` and any policy (a QSSF baseline, say) call the same code. It never
stops a job; only --time does.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from gq.escapes import escape_controls
from gq.model import Job

LAST_RUNS = 2  # runs averaged, as EASY++ does

# Programs that run a script or module named in their arguments: the script is what identifies
# the work. Versioned names (python3.11) are matched by their prefix.
_LAUNCHERS = ("python", "pypy", "bash", "sh", "zsh", "dash", "torchrun", "accelerate",
              "deepspeed", "uv", "poetry", "conda", "srun", "mpirun", "Rscript", "julia",
              "node", "ruby", "perl")
_SKIP_WORDS = {"run", "launch", "exec", "-m", "-u", "-O", "-B"}


@dataclass(frozen=True)
class Fingerprint:
    user: str
    program: str
    script: str
    gpus: int

    @property
    def label(self) -> str:
        """What people call the work: 'train.py', or the program's name; a sentence quotes it
        ("no completed run of train.py"), so its control characters come escaped."""
        if self.script.startswith("-c "):
            return escape_controls(f"{self.program} -c")
        return escape_controls(_basename(self.script) or self.program)


def fingerprint(user: str, command: list[str], gpus: int) -> Fingerprint:
    """The fingerprint of a job's command (see the module's docstring)."""
    program = _basename(command[0]) if command else ""
    script = ""
    if program.startswith(_LAUNCHERS):
        words = iter(command[1:])
        for word in words:
            if word == "-c":  # inline code: the code is the script
                script = "-c " + next(words, "")
                break
            if word in _SKIP_WORDS or word.startswith("-") or "=" in word:
                continue
            script = word
            break
    return Fingerprint(user, program, script, gpus)


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def fingerprint_of(job: Job) -> Fingerprint:
    return fingerprint(job.user, job.command, job.gpus_held)


@dataclass(frozen=True)
class Prediction:
    """A predicted run time (seconds; None: unknown) and what it rests on, in words."""

    seconds: float | None
    runs: int  # completed runs of the fingerprint it rests on
    basis: str

    @property
    def known(self) -> bool:
        return self.seconds is not None


def predict(durations: list[float], label: str, elapsed: float | None = None,
            limit: float | None = None) -> Prediction:
    """From the completed runs' durations (oldest first): the mean of the last two; doubled
    while a running job (`elapsed` seconds in) has outlived it; at most `limit` (its --time)."""
    if not durations:
        return Prediction(None, 0, f"unknown: no completed run of {label} yet")
    last = durations[-LAST_RUNS:]
    seconds = sum(last) / len(last)
    runs = "your last run" if len(last) == 1 else f"your last {len(last)} runs"
    basis = f"like {runs} of {label}"
    if elapsed is not None and seconds > 0:
        grown = seconds
        while grown <= elapsed:
            grown *= 2
        if grown != seconds:
            basis += f", doubled as it outlived {_short(seconds)}"
            seconds = grown
    if limit is not None and seconds > limit:
        seconds, basis = limit, basis + ", capped at its --time"
    return Prediction(seconds, len(last), basis)


def _short(seconds: float) -> str:
    minutes = seconds / 60
    return f"{seconds:.0f}s" if minutes < 1 else (f"{minutes:.0f} min" if minutes < 90
                                                  else f"{minutes / 60:.1f} h")


@dataclass
class RunTimes:
    """The last durations of each fingerprint's completed runs, kept as runs end."""

    last: dict[Fingerprint, deque] = field(default_factory=dict)

    def record(self, fp: Fingerprint, seconds: float) -> None:
        self.last.setdefault(fp, deque(maxlen=LAST_RUNS)).append(max(seconds, 0.0))

    def predict(self, job: Job, now: float | None = None,
                fp: Fingerprint | None = None) -> Prediction:
        """`fp`: the job's fingerprint when the caller has it (the daemon's cached jobs carry
        no command)."""
        fp = fp or fingerprint_of(job)
        elapsed = (now - job.started_at if now is not None and job.started_at is not None
                   else None)
        return predict(list(self.last.get(fp, ())), fp.label, elapsed, job.time_limit)

    def limits(self, jobs: list[Job], now: float, fp_of=fingerprint_of) -> dict[int, float]:
        """For the scheduler (SchedulerInput.predicted): the predicted run time of each job
        that has one, at most its --time; a running job's grows once it outlives it.
        `fp_of(job)`: its fingerprint."""
        out = {}
        for job in jobs:
            if self.last:
                p = self.predict(job, now, fp_of(job))
                if p.seconds is not None:
                    out[job.id] = p.seconds
        return out


def prediction_errors(runs: list[tuple[Fingerprint, float, float]]
                      ) -> list[tuple[float, float]]:
    """For runs in the order they ended, (fingerprint, duration, ended_at): (ended_at, how far
    the run's prediction, from the runs before it, was from its duration in seconds); runs
    with no prediction are left out."""
    book, errors = RunTimes(), []
    for fp, seconds, ended in runs:
        before = list(book.last.get(fp, ()))
        if before:
            errors.append((ended, abs(predict(before, fp.label).seconds - seconds)))
        book.record(fp, seconds)
    return errors

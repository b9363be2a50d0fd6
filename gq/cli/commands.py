"""The hot commands as data: one table that the light parser parses with, and that the Typer
app, and through it `--help`, completion and docs/cli.md, are generated from.

`gq ls`, `gq why`, `gq cancel`... are typed dozens of times an hour and run in loops, so they
do not wait for Typer (and pydantic) to import: `gq.cli.light` parses their argv with this
table and runs the same command functions (`gq.cli.jobs_cmd`) that the Typer commands run.
Anything the light parser is not sure of (`--help`, an unknown option, a bad number) goes to
Typer, so that help, errors and exit codes stay Typer's. Import-light: plain classes only.
"""

from __future__ import annotations


class Opt:
    """One option. kind: "flag" (a bool, default False), "value" (one value, default None),
    "multi" (repeatable: a list, default None), or "switch" (`--on/--off`, default None)."""

    __slots__ = ("flags", "dest", "kind", "type", "metavar", "help", "min", "off")

    def __init__(self, flags: tuple[str, ...], dest: str, kind: str, help: str,
                 type: str = "str", metavar: str | None = None, min: int | None = None,
                 off: tuple[str, ...] = ()):
        self.flags, self.dest, self.kind, self.help = flags, dest, kind, help
        self.type = type  # "str" or "int" (converted as click converts: int())
        self.metavar = metavar  # None: Typer's own (<str>, <list[str]>)
        self.min = min  # an int's lowest value, as click.IntRange(min=...)
        self.off = off  # a switch's flags that turn it off (--this-host)

    @property
    def default(self):
        return False if self.kind == "flag" else None


class Arg:
    """The positional argument of a command: one value, or one or more ("many"); one that
    is not `required` defaults to None."""

    __slots__ = ("dest", "metavar", "help", "many", "required")

    def __init__(self, dest: str, metavar: str, help: str, many: bool = False,
                 required: bool = True):
        self.dest, self.metavar, self.help, self.many = dest, metavar, help, many
        self.required = required


class Command:
    """A command: its name, help (the first sentence is the summary in `gq --help`), argument
    and options in the order `--help` lists them, and its function in gq.cli.jobs_cmd.
    interspersed=False: the first word that is not an option ends the options (`gq submit`,
    whose command has options of its own; its own parser is gq.cli.submit_args)."""

    __slots__ = ("name", "help", "arg", "options", "function", "by_flag", "interspersed")

    def __init__(self, name: str, help: str, arg: Arg | None, options: tuple[Opt, ...],
                 function: str | None = None, interspersed: bool = True):
        self.name, self.help, self.arg, self.options = name, help, arg, options
        self.function = function or name
        self.by_flag = {f: o for o in options for f in (*o.flags, *o.off)}
        self.interspersed = interspersed


# gq submit's options: its light parser is gq.cli.submit_args.parse_argv (options end at the
# first word that is not one: the rest is the command), its converter request_args.
SUBMIT_OPTIONS = (
    Opt(("--gpus", "-g"), "gpus", "value", "GPUs per job (0 = CPU-only job), or a range MIN-MAX: "
        "start with as many as are free (GQ_NUM_GPUS says how many)  [default: 1]", metavar="N"),
    Opt(("--mem", "-m"), "mem", "value", "GPU memory per GPU, e.g. 20G; the job may share a card. "
        "Without it: whole cards. auto: the peak of this command's last successful runs here, plus "
        "20%", metavar="SIZE"),
    Opt(("--cpus", "-c"), "cpus", "value", "host CPU cores  [default: 1]", metavar="N"),
    Opt(("--ram",), "ram", "value", "host memory, e.g. 32G", metavar="SIZE"),
    Opt(("--priority", "-p"), "priority", "value", "high | normal | low  [default: normal]",
        metavar="TIER"),
    Opt(("--time", "-t"), "time", "value", "wall-time limit, e.g. 90m, 2h, 1d12h", metavar="DUR"),
    Opt(("--pool",), "pool", "value", "run on the cards of this pool ([pools.NAME] of the host)  "
        "[default: the default pool]", metavar="NAME"),
    Opt(("--interactive",), "interactive", "flag", "a short interactive job: goes ahead of batch "
        "work, in the interactive pool; needs --time unless the pool sets max_time"),
    Opt(("--preemptible",), "preemptible", "flag", "may be stopped and requeued for higher-tier "
        "work  [default: low tier yes, others no]"),
    Opt(("--no-preemptible",), "no_preemptible", "flag", "never stop it for other work, whatever "
        "its tier"),
    Opt(("--signal",), "signal", "value", "checkpoint signal, sent to the job's main process on "
        "preemption and DUR before the --time limit, e.g. USR1@5m  [default: TERM]",
        metavar="SIG[@DUR]"),
    Opt(("--signal-group",), "signal_group", "flag", "send the checkpoint signal to the job's "
        "whole process group, not its main process"),
    Opt(("--grace",), "grace", "value", "time between the checkpoint signal and SIGKILL  [default: "
        "60s]", metavar="DUR"),
    Opt(("--preempt-mode",), "preempt_mode", "value", "how it makes way when preempted: freeze "
        "(its GPU state to host memory, thawed later where it was), signal (the checkpoint "
        "signal, then requeued) or auto (freeze if it saves no checkpoints); a freeze that cannot "
        "be done takes the signal path  [default: its tier's, [preemption] mode]",
        metavar="MODE"),
    Opt(("--retry-oom",), "retry_oom", "value", "after a CUDA out-of-memory death, queue it again "
        "up to N times with 1.5x the --mem", metavar="N"),
    Opt(("--after",), "after", "multi",
        "start after these jobs end, any outcome", metavar="ID[,ID]"),
    Opt(("--afterok",), "afterok", "multi", "start after these jobs complete", metavar="ID[,ID]"),
    Opt(("--afternotok",), "afternotok", "multi",
        "start after these jobs end other than completed", metavar="ID[,ID]"),
    Opt(("--afterstart",), "afterstart", "multi",
        "start once these jobs have started (or ended unstarted): Slurm's after",
        metavar="ID[,ID]"),
    Opt(("--name", "-n"), "name", "value", "a label (default: the script, train.py for python "
        "train.py; else the program)", metavar="NAME"),
    Opt(("--cwd",), "cwd", "value", "working directory  [default: the current one]", metavar="DIR"),
    Opt(("--env",), "env", "multi", "set a variable in the job (repeatable)", metavar="K=V"),
    Opt(("--array",), "array", "value", "queue an array: one job per index, e.g. 0-15, 1,3,5, "
        "0-30:2; %N runs at most N at once (0-15%4). The index is in GQ_ARRAY_INDEX",
        metavar="SPEC"),
    Opt(("--sweep",), "sweep", "multi", "queue one job per combination of values (repeatable: the "
        "cartesian product), {KEY} in the command replaced by each value", metavar="KEY=V1,V2"),
    Opt(("--notify",), "notify", "value", "run this shell command when the job ends (GQ_JOB_ID, "
        "GQ_STATE, GQ_EXIT_CODE... set)", metavar="CMD"),
    Opt(("--mail",), "mail", "value",
        "mail USER when the job ends (needs sendmail)", metavar="USER"),
    Opt(("--host",), "host", "value", "run on a peer (gq peers ls); any: on the host where it "
        "would start first  [default: this host]", metavar="HOST|any"),
    Opt(("--hold",), "hold", "flag", "queue the job held: it waits for `gq release`"),
    Opt(("--dry-run",), "dry_run", "flag", "print what gq understood of the command and the "
        "script's #SBATCH and #GQ lines, option by option; queue nothing"),
    Opt(("--json",), "json", "flag", "print the job as JSON"),
)
SUBMIT = Command("submit", "Queue a job and print its id.  gq submit [OPTIONS] -- COMMAND "
                 "[ARGS...]", Arg("command", "COMMAND", "the command and its arguments",
                                  many=True, required=False),
                 SUBMIT_OPTIONS, interspersed=False)

# gq run's: submit's, less those of many jobs or none attached, and its own (docs/run.md).
_NOT_RUN = {"array", "sweep", "hold", "dry_run", "json"}
_RUN_HOST = Opt(("--host",), "host", "value", "not yet: gq run on a peer is refused (gq "
               "submit --host, then gq logs -f)", metavar="HOST")
RUN_OPTIONS = tuple(_RUN_HOST if o.dest == "host" else o
                    for o in SUBMIT_OPTIONS if o.dest not in _NOT_RUN) + (
    Opt(("--no-hangup",), "no_hangup", "flag", "keep the job running, detached, when this gq run "
        "goes away (killed, its terminal closed); by default it is cancelled"),
    Opt(("--log",), "log", "flag", "also keep the job's output in its log files (gq logs ID), "
        "as gq submit does"),
)
RUN = Command("run", "Run a job in the foreground, as srun does: queued like any job, then "
              "attached to this terminal (a pseudo-terminal of its own when stdin is one), its "
              "exit code gq run's. Without a command: your $SHELL on the allocation, as salloc. "
              "gq run [OPTIONS] [-- COMMAND [ARGS...]]",
              Arg("command", "COMMAND", "the command and its arguments  [default: $SHELL]",
                  many=True, required=False),
              RUN_OPTIONS, interspersed=False)

ID = Arg("id", "ID", "a job id; @ is your last job")
IDS = Arg("ids", "ID...", "job ids; an array's id is all its elements, 12_3 element 3 of array "
          "12; @ is your last submit", many=True)
JSON = Opt(("--json",), "json", "flag", "print JSON (a stable schema)")
ALL_HOSTS = Opt(("--all-hosts",), "all_hosts", "switch", "every host: this one and its peers "
                "(gq peers), remote jobs as HOST:ID  [default: [peers] all_hosts, else this "
                "host]", off=("--this-host",))

LS = Command(
    "ls",
    "List jobs: pending and running ones, and your jobs that ended in the last day ([daemon] "
    "show_ended) until `gq clean` (the last 10, the others counted on one line); all with --all. "
    "Pending ones show a reason. An array or sweep is one line, with its elements counted by "
    "state (see --expand, --array). --json without --all lists the pending and running ones "
    "only, as scripts expect.",
    None,
    (
        Opt(("--all", "-a"), "all", "flag", "also ended jobs, however old"),
        Opt(("--user", "-u"), "user", "value", "only this user's"),
        Opt(("--state", "-s"), "state", "multi", "only jobs in this state (repeatable)"),
        Opt(("--last",), "last", "value", "with --all: the last N jobs submitted", type="int",
            metavar="N", min=1),
        Opt(("--since",), "since", "value", "with --all: jobs active in the last DUR (e.g. 2h, "
            "7d)", metavar="DUR"),
        Opt(("--start",), "start", "flag", "show when pending jobs with a reservation are "
            "expected to start"),
        Opt(("--expand", "-e"), "expand", "flag", "one line per element of an array or sweep, "
            "instead of one per array"),
        Opt(("--array",), "array", "value", "one array's (or sweep's) elements, each on its "
            "line, ended ones too", type="int", metavar="ID", min=1),
        ALL_HOSTS,
        JSON,
    ),
)
CLEAN = Command("clean", "Take your ended jobs off `gq ls` (they stay in gq ls --all, gq show "
                "and gq stats).", None, ())
SHOW = Command("show", "Everything known about one job, with its history.", ID, (JSON,))
WHY = Command("why", "Why a job waits (or how it ended), in words.", ID, ())
LOGS = Command("logs", "Output of a job.", ID, (
    Opt(("--follow", "-f"), "follow", "flag", "keep printing until the job ends"),
    Opt(("--err",), "err", "flag", "standard error instead of output"),
))
CANCEL = Command("cancel", "Stop jobs (SIGTERM to the whole process tree, SIGKILL after the "
                 "grace) and forget them. An array id stands for all its elements; 12_3 is "
                 "element 3 of array 12.", IDS, ())
HOLD = Command("hold", "Keep pending jobs from starting until released. An array id: all its "
               "elements.", IDS, ())
RELEASE = Command("release", "Let held jobs start; for a job whose dependency failed, drop the "
                  "dependency. An array id: all its elements.", IDS, ())
REQUEUE = Command("requeue", "Queue jobs again with the same id: a running one is stopped as "
                  "for preemption (its checkpoint signal, its grace, then SIGKILL) and resumes "
                  "from GQ_CHECKPOINT_DIR; an ended one is queued as it was.", IDS, ())
UPDATE = Command(
    "update",
    "Change what pending or held jobs (your own) ask for, with the checks of submit; an array "
    "id changes all its waiting elements. A running job's --time may be lowered (raising it is "
    "for admins). A job that took its tier's default preemptibility takes the new tier's.",
    IDS,
    (
        Opt(("--mem", "-m"), "mem", "value", "GPU memory per GPU, e.g. 20G", metavar="SIZE"),
        Opt(("--gpus", "-g"), "gpus", "value", "GPUs per job", metavar="N"),
        Opt(("--cpus", "-c"), "cpus", "value", "host CPU cores", metavar="N"),
        Opt(("--ram",), "ram", "value", "host memory, e.g. 32G", metavar="SIZE"),
        Opt(("--time", "-t"), "time", "value", "wall-time limit, e.g. 90m; a running job's may "
            "be lowered (raised: admins)", metavar="DUR"),
        Opt(("--name", "-n"), "name", "value", "label", metavar="NAME"),
        Opt(("--priority", "-p"), "priority", "value", "the tier: high, normal or low",
            metavar="T"),
    ),
)
WAIT = Command(
    "wait",
    "Block until the jobs end; exit with the (first failing) job's exit code, 3 when a job can "
    "no longer start (its dependency failed, or a limit it can never meet: gq why says what to "
    "do), 124 when --timeout runs out first.",
    IDS,
    (Opt(("--timeout",), "timeout", "value", "give up after DUR (e.g. 90s, 2h) with exit "
         "status 124", metavar="DUR"),),
)
GPUS = Command("gpus", "Cards: memory held by each job and by processes outside gq, "
               "utilisation.", None, (ALL_HOSTS, JSON))
OFFENDERS = Command("offenders", "Jobs and processes wasting cards (idle, over-declared, over "
                    "budget, zombie memory, strays), with the evidence and a suggested action.",
                    None, (ALL_HOSTS, JSON))

COMMANDS: dict[str, Command] = {c.name: c for c in (
    SUBMIT, RUN, LS, CLEAN, SHOW, WHY, LOGS, CANCEL, HOLD, RELEASE, REQUEUE, UPDATE, WAIT, GPUS,
    OFFENDERS)}
ALIASES = {"add": "submit", "ps": "ls"}


def command(name: str) -> Command | None:
    """The hot command of that name (or alias), if it is one."""
    return COMMANDS.get(ALIASES.get(name, name))

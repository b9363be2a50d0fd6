"""The Typer app: every command's options, help and completion. Commands stay thin."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from gq.cli import output
from gq.cli.client import call, submit_job
from gq.cli.daemon_cmd import daemon_app
from gq.cli.reserve_cmd import reserve_app
from gq.protocol import BAD_INPUT, GqError

app = typer.Typer(
    name="gq",
    help="A GPU job queue for shared lab workstations.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    add_completion=False,  # gq's own scripts (gq completion) answer without importing Typer
)
app.add_typer(daemon_app, name="daemon")
app.add_typer(reserve_app, name="reserve")

def _version(value: bool) -> None:
    if value:
        from gq import __version__

        print(f"gq {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", "-V", help="print gq's version and exit",
                                          is_eager=True, callback=_version)] = False,
) -> None:
    """A GPU job queue for shared lab workstations."""


Ids = Annotated[list[str], typer.Argument(
    help="job ids; an array's id is all its elements, 12_3 element 3 of array 12; @ is your "
    "last submit", metavar="ID...")]
Id = Annotated[str, typer.Argument(help="a job id; @ is your last job", metavar="ID")]
Json = Annotated[bool, typer.Option("--json", help="print JSON (a stable schema)")]
AllHosts = Annotated[Optional[bool], typer.Option(
    "--all-hosts/--this-host", help="every host: this one and its peers (gq peers), remote jobs "
    "as HOST:ID  [default: [peers] all_hosts, else this host]", show_default=False)]


def _opt(dest: str, *, multi: bool = False):
    """A Typer option built from the submit table, so the two parsers cannot drift apart."""
    from gq.cli.submit_args import OPTIONS

    o = next(o for o in OPTIONS if o.dest == dest)
    names = [o.long] + ([o.short] if o.short else [])
    if o.kind == "flag":
        return typer.Option(*names, help=o.help)
    return typer.Option(*names, help=o.help, metavar=o.metavar, show_default=False)


@app.command(
    "submit",
    context_settings={"allow_interspersed_args": False},
    help="Queue a job and print its id.  gq submit [OPTIONS] -- COMMAND [ARGS...]",
)
def submit(
    command: Annotated[list[str], typer.Argument(help="the command and its arguments",
                                                 metavar="COMMAND",
                                                 show_default=False)] = None,
    gpus: Annotated[Optional[str], _opt("gpus")] = None,
    mem: Annotated[Optional[str], _opt("mem")] = None,
    cpus: Annotated[Optional[str], _opt("cpus")] = None,
    ram: Annotated[Optional[str], _opt("ram")] = None,
    priority: Annotated[Optional[str], _opt("priority")] = None,
    time: Annotated[Optional[str], _opt("time")] = None,
    pool: Annotated[Optional[str], _opt("pool")] = None,
    interactive: Annotated[bool, _opt("interactive")] = False,
    preemptible: Annotated[bool, _opt("preemptible")] = False,
    no_preemptible: Annotated[bool, _opt("no_preemptible")] = False,
    signal: Annotated[Optional[str], _opt("signal")] = None,
    signal_group: Annotated[bool, _opt("signal_group")] = False,
    grace: Annotated[Optional[str], _opt("grace")] = None,
    preempt_mode: Annotated[Optional[str], _opt("preempt_mode")] = None,
    retry_oom: Annotated[Optional[str], _opt("retry_oom")] = None,
    after: Annotated[Optional[list[str]], _opt("after")] = None,
    afterok: Annotated[Optional[list[str]], _opt("afterok")] = None,
    afternotok: Annotated[Optional[list[str]], _opt("afternotok")] = None,
    name: Annotated[Optional[str], _opt("name")] = None,
    cwd: Annotated[Optional[str], _opt("cwd")] = None,
    env: Annotated[Optional[list[str]], _opt("env")] = None,
    array: Annotated[Optional[str], _opt("array")] = None,
    sweep: Annotated[Optional[list[str]], _opt("sweep")] = None,
    notify: Annotated[Optional[str], _opt("notify")] = None,
    mail: Annotated[Optional[str], _opt("mail")] = None,
    host: Annotated[Optional[str], _opt("host")] = None,
    hold: Annotated[bool, _opt("hold")] = False,
    json: Annotated[bool, _opt("json")] = False,
) -> None:
    from gq.cli.directives import apply_directives
    from gq.cli.submit_args import request_args

    values = {k: v for k, v in locals().items() if k != "command" and v not in (None, False)}
    job = submit_job(request_args(*apply_directives(values, command or [])))
    for note in job.get("notes", ()):
        print(f"gq: {note}", file=sys.stderr)
    output.print_json(job) if json else print(job["id"])


app.command("add", context_settings={"allow_interspersed_args": False},
            help="Alias of submit.")(submit)


@app.command("ls")
def ls(
    all: Annotated[bool, typer.Option("--all", "-a", help="also ended jobs, however old")] = False,
    user: Annotated[Optional[str], typer.Option("--user", "-u", help="only this user's")] = None,
    state: Annotated[Optional[list[str]], typer.Option("--state", "-s", help="only jobs in "
                     "this state (repeatable)")] = None,
    last: Annotated[Optional[int], typer.Option("--last", help="with --all: the last N jobs "
                    "submitted", metavar="N", min=1, show_default=False)] = None,
    since: Annotated[Optional[str], typer.Option("--since", help="with --all: jobs active in "
                     "the last DUR (e.g. 2h, 7d)", metavar="DUR", show_default=False)] = None,
    start: Annotated[bool, typer.Option("--start", help="show when pending jobs with a "
                     "reservation are expected to start")] = False,
    expand: Annotated[bool, typer.Option("--expand", "-e", help="one line per element of an "
                      "array or sweep, instead of one per array")] = False,
    all_hosts: AllHosts = None,
    json: Json = False,
) -> None:
    """List jobs: pending and running ones, and your jobs that ended in the last day ([daemon]
    show_ended) until `gq clean`; all with --all. Pending ones show a reason. An array is one
    line, with its elements counted by state (see --expand). --json without --all lists the
    pending and running ones only, as scripts expect."""
    from gq.cli.peers_cmd import hosts_arg, split_hosts

    window = _ls_window(all, last, since)
    jobs = split_hosts(call("list", all=all or bool(window), user=user, states=state or [],
                            brief=not json, hosts=hosts_arg(all_hosts), recent=not json,
                            **window), "jobs")
    if json:
        return output.print_json(jobs)
    from gq.wording.arrays import table_rows

    headers, rows = table_rows(jobs, with_start=start, expand=expand,
                               listed_all=all or bool(state) or bool(window))
    print(output.table(headers, rows, paint=output.state_painter(headers)))


def _ls_window(all: bool, last: int | None, since: str | None) -> dict:
    from gq.units import parse_duration

    window: dict = {} if last is None else {"last": last}
    if since is not None:
        try:
            window["since"] = parse_duration(since)
        except ValueError as e:
            raise GqError(f"--since {e}", BAD_INPUT) from None
    return window


@app.command("clean")
def clean() -> None:
    """Take your ended jobs off `gq ls` (they stay in gq ls --all, gq show and gq stats)."""
    print(f"cleared {call('clean')['cleared']} ended job(s) from gq ls")


app.command("ps", help="Alias of ls.")(ls)


@app.command("show")
def show(id: Id, json: Json = False) -> None:
    """Everything known about one job, with its history."""
    job = call("show", id=id)
    if json:
        return output.print_json(job)
    from gq.cli.details import print_job

    print_job(job)


@app.command("why")
def why(id: Id) -> None:
    """Why a job waits (or how it ended), in words."""
    print(call("why", id=id)["why"])


@app.command("logs")
def logs(
    id: Id,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="keep printing until the job "
                      "ends")] = False,
    err: Annotated[bool, typer.Option("--err", help="standard error instead of output")] = False,
) -> None:
    """Output of a job."""
    from gq.cli.logs import show_log

    show_log(id, follow=follow, stderr=err)


def _act(op: str, ids: list[str], **args) -> int:
    from gq.wording.arrays import fold_results

    failed = 0
    for ok, line in fold_results(call(op, ids=ids, **args)):
        print(line if ok else f"gq: {line}", file=sys.stdout if ok else sys.stderr)
        failed += not ok
    return 1 if failed else 0


@app.command("cancel")
def cancel(ids: Ids) -> int:
    """Stop jobs (SIGTERM to the whole process tree, SIGKILL after the grace) and forget them.
    An array id stands for all its elements; 12_3 is element 3 of array 12."""
    return _act("cancel", ids)


@app.command("hold")
def hold(ids: Ids) -> int:
    """Keep pending jobs from starting until released. An array id: all its elements."""
    return _act("hold", ids)


@app.command("release")
def release(ids: Ids) -> int:
    """Let held jobs start; for a job whose dependency failed, drop the dependency. An array
    id: all its elements."""
    return _act("release", ids)


@app.command("requeue")
def requeue(ids: Ids) -> int:
    """Queue jobs again with the same id: a running one is stopped as for preemption (its
    checkpoint signal, its grace, then SIGKILL) and resumes from GQ_CHECKPOINT_DIR; an ended
    one is queued as it was."""
    return _act("requeue", ids)


@app.command("update")
def update(
    ids: Ids,
    mem: Annotated[Optional[str], typer.Option("--mem", "-m", help="GPU memory per GPU, e.g. "
                   "20G", metavar="SIZE", show_default=False)] = None,
    gpus: Annotated[Optional[str], typer.Option("--gpus", "-g", help="GPUs per job",
                    metavar="N", show_default=False)] = None,
    cpus: Annotated[Optional[str], typer.Option("--cpus", "-c", help="host CPU cores",
                    metavar="N", show_default=False)] = None,
    ram: Annotated[Optional[str], typer.Option("--ram", help="host memory, e.g. 32G",
                   metavar="SIZE", show_default=False)] = None,
    time: Annotated[Optional[str], typer.Option("--time", "-t", help="wall-time limit, e.g. "
                    "90m; a running job's may be lowered (raised: admins)", metavar="DUR",
                    show_default=False)] = None,
    name: Annotated[Optional[str], typer.Option("--name", "-n", help="label", metavar="NAME",
                    show_default=False)] = None,
    priority: Annotated[Optional[str], typer.Option("--priority", "-p", help="the tier: high, "
                        "normal or low", metavar="T", show_default=False)] = None,
) -> int:
    """Change what pending or held jobs (your own) ask for, with the checks of submit; an
    array id changes all its waiting elements. A running job's --time may be lowered (raising
    it is for admins). A job that took its tier's default preemptibility takes the new
    tier's."""
    from gq.cli.submit_args import update_args

    return _act("update", ids, **update_args(mem=mem, gpus=gpus, cpus=cpus, ram=ram,
                                             time=time, name=name, priority=priority))


@app.command("wait")
def wait(
    ids: Ids,
    timeout: Annotated[Optional[str], typer.Option(
        "--timeout", help="give up after DUR (e.g. 90s, 2h) with exit status 124",
        metavar="DUR", show_default=False)] = None,
) -> int:
    """Block until the jobs end; exit with the (first failing) job's exit code, 3 when a job
    can no longer start (its dependency failed, or a limit it can never meet: gq why says what
    to do), 124 when --timeout runs out first."""
    from gq.wording.arrays import fold_waited, wait_status
    from gq.cli.client import wait_for_jobs
    from gq.units import parse_duration

    try:
        seconds = None if timeout is None else parse_duration(timeout, allow_zero=True)
    except ValueError as e:
        raise GqError(f"--timeout {e}", BAD_INPUT) from None
    jobs = wait_for_jobs(ids, timeout=seconds)
    print("\n".join(fold_waited(jobs)))
    return wait_status(jobs)


@app.command("gpus")
def gpus(all_hosts: AllHosts = None, json: Json = False) -> None:
    """Cards: memory held by each job and by processes outside gq, utilisation."""
    from gq.cli.peers_cmd import hosts_arg, print_hosts_gpus

    cards = call("gpus", hosts=hosts_arg(all_hosts))
    if isinstance(cards, dict):  # every host's
        return output.print_json(cards["hosts"]) if json else print_hosts_gpus(cards["hosts"])
    if json:
        return output.print_json(cards)
    from gq.cli.details import print_gpus

    print_gpus(cards)


@app.command("offenders")
def offenders(all_hosts: AllHosts = None, json: Json = False) -> None:
    """Jobs and processes wasting cards (idle, over-declared, over budget, zombie memory,
    strays), with the evidence and a suggested action."""
    import time as _time

    from gq.cli.peers_cmd import hosts_arg, print_hosts_offenders
    from gq.cli.stats_cmd import print_offenders

    found = call("offenders", hosts=hosts_arg(all_hosts))
    if isinstance(found, dict):  # every host's
        if json:
            return output.print_json(found["hosts"])
        return print_hosts_offenders(found["hosts"], _time.time())
    if json:
        return output.print_json(found)
    print_offenders(found, _time.time())


@app.command("stats")
def stats(
    since: Annotated[str, typer.Option("--since", help="the period: the last DUR, e.g. 7d, "
                     "12h, 30d", metavar="DUR")] = "7d",
    json: Json = False,
    prometheus: Annotated[bool, typer.Option("--prometheus", help="print Prometheus text "
                          "exposition, to scrape")] = False,
    month: Annotated[bool, typer.Option("--month", help="write the monthly review as Markdown: "
                     "the last month that ended (or --of), against the one before")] = False,
    of: Annotated[Optional[str], typer.Option("--of", help="with --month: which month",
                                              metavar="YYYY-MM")] = None,
) -> None:
    """The lab's numbers: health indicators against their targets, utilisation, allocation,
    waits by tier, outcomes, GPU-hours by user and account, idle GPU-hours, offenders."""
    from gq.units import parse_duration

    if month or of:
        from gq.cli.stats_cmd import monthly

        return print(monthly(of), end="")
    try:
        seconds = parse_duration(since)
    except ValueError as e:
        raise GqError(f"--since {e}", BAD_INPUT) from None
    figures = call("stats", since=seconds)
    if json:
        return output.print_json(figures)
    from gq.cli import stats_cmd

    print(stats_cmd.prometheus(figures, since), end="") if prometheus else (
        stats_cmd.print_stats(figures))


@app.command("triage")
def triage(
    file: Annotated[str, typer.Argument(help="a log file: a job's output, a Slurm job's .out",
                                        metavar="FILE")],
    exit_code: Annotated[Optional[int], typer.Option("--exit-code", help="the exit status "
                         "it ended with, if known (137: killed by SIGKILL)", metavar="N")] = None,
    json: Json = False,
) -> None:
    """Why a run died, from its log: the failure class, the lines it rests on, what to do.
    The same classifier the daemon runs on every failed job; no daemon needed."""
    from gq.cli.triage_cmd import print_triage, triage_file

    result = triage_file(file, exit_code)
    output.print_json(result) if json else print_triage(result)


@app.command("mcp")
def mcp() -> None:
    """Serve gq to coding agents: a Model Context Protocol server on stdio, with gq's read
    commands and actions as tools, as you (docs/agents.md). Needs pip install 'gq[mcp]'."""
    from gq.cli.mcp_server import serve

    serve()


@app.command("fairshare")
def fairshare(json: Json = False) -> None:
    """Fair share, as Slurm's sshare: each account's and user's share, decayed usage and the
    factor their waiting jobs get, so you can tell why one job goes before another."""
    found = call("fairshare")
    if json:
        return output.print_json(found)
    from gq.cli.stats_cmd import print_fairshare

    print_fairshare(found)


@app.command("top")
def top(
    interval: Annotated[float, typer.Option("--interval", help="seconds between refreshes",
                        metavar="S", min=0.2)] = 1.0,
) -> None:
    """The interactive terminal UI: every card's memory by job, the queue and the offenders
    (keys: docs/top.md, or ? inside)."""
    from gq.cli.top_cmd import run_top

    run_top(interval)


@app.command("demo")
def demo(
    no_tui: Annotated[bool, typer.Option("--no-tui", help="run the scenario without the UI and "
                      "print what happens")] = False,
    seconds: Annotated[float, typer.Option("--seconds", help="with --no-tui: how long to watch",
                       metavar="S", min=5)] = 40.0,
) -> int:
    """A simulated 4-GPU host in a temporary GQ_HOME with a realistic mixed workload, shown in
    gq top; everything it started is stopped and removed on exit."""
    from gq.cli.demo import run_demo

    return run_demo(tui=not no_tui, seconds=seconds)


@app.command("burn")
def burn(
    mem: Annotated[str, typer.Option("--mem", help="memory held on every visible card",
                                     metavar="SIZE")] = "1G",
    util: Annotated[int, typer.Option("--util", help="utilisation added to every visible card",
                                      metavar="PCT", min=0, max=100)] = 100,
    seconds: Annotated[Optional[float], typer.Option(
        "--seconds", help="how long to run  [default: until stopped]", metavar="S", min=0,
        show_default=False)] = None,
    leak: Annotated[bool, typer.Option("--leak", help="leave the memory held after exit, as "
                                       "zombie memory")] = False,
) -> int:
    """A stand-in for a training job on simulated cards (GQ_SIM_GPUS): holds memory and
    utilisation on the cards in CUDA_VISIBLE_DEVICES, e.g. gq submit -- gq burn --mem 10G."""
    from gq.sim.burn import run as run_burn
    from gq.units import parse_size

    try:
        size = parse_size(mem)
    except ValueError as e:
        raise GqError(f"--mem {e}", BAD_INPUT) from None
    return run_burn(size, util, seconds, leak)


from gq.cli.peers_cmd import peers_app  # noqa: E402 (gq peers: gq/cli/peers_cmd.py)

app.add_typer(peers_app, name="peers")


# ---- gq sim: options here, the work in gq/cli/sim_cmd.py (imported only when it runs) ----
@app.command("sim")
def sim(
    trace: Annotated[Optional[str], typer.Argument(
        help="a trace CSV (Alibaba openb, Philly, or gq's own format: docs/traces.md)",
        metavar="TRACE.csv", show_default=False)] = None,
    cluster: Annotated[Optional[str], typer.Option(
        "--cluster", help="HOSTSxCARDS, cards as in GQ_SIM_GPUS: 3x8x80G, 2x8xH100/2 "
        "[default: 4x8x80G; with --from-history, this host's cards]", metavar="SPEC",
        show_default=False)] = None,
    policy: Annotated[str, typer.Option(
        "--policy", help="gq, fifo (strict first in, first out), greedy (start whatever "
        "fits, no reservations), sjf-oracle (shortest true run time first), tiresias "
        "(least attained service, preempting), qssf (smallest expected cards x time, "
        "learned per user), or all", metavar="POLICY")] = "gq",
    fmt: Annotated[str, typer.Option(
        "--format", help="auto (from the header), alibaba, philly or gq",
        metavar="FORMAT")] = "auto",
    time_factor: Annotated[float, typer.Option(
        "--time-factor", help="jobs declare a time limit of this many times their run time "
        "(when the trace gives none); 0: none", metavar="X")] = 2.0,
    time_model: Annotated[Optional[str], typer.Option(
        "--time-model", help="how users declare time limits the trace does not give: "
        "factor:F (F times the run time, as --time-factor), none, or modal (round values far "
        "above the run time, as batch logs show: docs/sim.md)", metavar="MODEL",
        show_default=False)] = None,
    learn: Annotated[bool, typer.Option(
        "--learn", help="plan jobs without a time limit by their run time learned from "
        "earlier runs of the same user, name and GPUs, as the daemon does")] = False,
    cpus_per_host: Annotated[int, typer.Option(
        "--cpus-per-host", help="CPU cores of each simulated host", metavar="N")] = 128,
    from_history: Annotated[bool, typer.Option(
        "--from-history", help="replay this host's own ended jobs instead of a file")] = False,
    preempt: Annotated[Optional[str], typer.Option(
        "--preempt", help="the gq policy preempts jobs of these tiers for higher-tier work "
        "(low, or normal,low), with the daemon's default exempt 10m and grace 60s",
        metavar="TIERS", show_default=False)] = None,
    lab: Annotated[Optional[str], typer.Option(
        "--config", help="the lab's pools, accounts, admin reservations, [scheduler] and "
        "[limits], as in config.toml (docs/sim.md)", metavar="LAB.toml",
        show_default=False)] = None,
    jobs: Annotated[Optional[str], typer.Option(
        "--jobs", help="also write each job's start, end, host and cards (and why a job was "
        "dropped) to this CSV file", metavar="FILE.csv", show_default=False)] = None,
    tiers: Annotated[str, typer.Option(
        "--tiers", help="on: the trace's tiers; off: every job normal, so that only order, "
        "fair share, backfill and packing are compared", metavar="on|off")] = "on",
    share_util_max: Annotated[Optional[float], typer.Option(
        "--share-util-max", help="the gq policy shares a card between slices only if their "
        "SM utilisation (drawn from measured profiles) sums to at most this, as the daemon's "
        "[scheduler] share_util_max [default: memory alone decides]", metavar="PERCENT",
        show_default=False)] = None,
    preempt_mode: Annotated[Optional[str], typer.Option(
        "--preempt-mode", help="with --preempt: how victims make way, as the daemon's "
        "[preemption] mode: signal, freeze (their GPU state to host memory, timed by "
        "--copy-rate) or auto [default: signal]", metavar="MODE", show_default=False)] = None,
    freeze_ram: Annotated[Optional[str], typer.Option(
        "--freeze-ram", help="host memory frozen jobs may hold per host, e.g. 256G "
        "[default: no limit]", metavar="SIZE", show_default=False)] = None,
    copy_rate: Annotated[Optional[str], typer.Option(
        "--copy-rate", help="bytes per second a freeze or thaw copies, e.g. 10G (an assumption "
        "until measured: docs/sim.md) [default: 10G]", metavar="SIZE", show_default=False)] = None,
    json: Json = False,
) -> int:
    """Replay a job trace offline on a described cluster, with the daemon's policy code."""
    from gq.cli.sim_cmd import freezing_of, run_sim

    return run_sim(trace, cluster, policy, fmt, time_factor, cpus_per_host, from_history, json,
                   preempt, lab, jobs, tiers, share_util_max, time_model, learn,
                   freezing_of(preempt, preempt_mode, freeze_ram, copy_rate))
# ---- end of gq sim ----


# ---- gq completion -----------------------------------------------------------------
completion_app = typer.Typer(help="Shell completion for bash, zsh and fish.",
                             no_args_is_help=True)
app.add_typer(completion_app, name="completion")
Shells = Annotated[Optional[list[str]], typer.Argument(
    help="bash, zsh or fish  [default: all three]", metavar="SHELL...", show_default=False)]


@completion_app.command("install")
def completion_install(shells: Shells = None) -> None:
    """Install the completion scripts where each shell looks for them (for your user)."""
    from gq.cli.completion import SHELLS, install

    for shell in shells or SHELLS:
        if shell not in SHELLS:
            raise GqError(f"{shell}: expected one of {', '.join(SHELLS)}", BAD_INPUT)
    print("\n".join(install(shells or list(SHELLS))))


@completion_app.command("rc")
def completion_rc(shell: Annotated[str, typer.Argument(
        help="bash, zsh or fish", metavar="SHELL", show_default=False)]) -> None:
    """Print the lines a shell's startup file needs for the installed completion to load, if
    any, e.g. gq completion rc bash >> ~/.bashrc (install.sh prints them last)."""
    from gq.cli.completion import SHELLS, rc_lines

    if shell not in SHELLS:
        raise GqError(f"{shell}: expected one of {', '.join(SHELLS)}", BAD_INPUT)
    for line in rc_lines(shell):
        print(line)


@completion_app.command("script")
def completion_script(shell: Annotated[str, typer.Argument(
        help="bash, zsh or fish", metavar="SHELL", show_default=False)]) -> None:
    """Print one shell's completion script, e.g. source <(gq completion script bash)."""
    from gq.cli.completion import SHELLS, script

    if shell not in SHELLS:
        raise GqError(f"{shell}: expected one of {', '.join(SHELLS)}", BAD_INPUT)
    sys.stdout.write(script(shell))


config_app = typer.Typer(help="The daemon's settings (config.toml).", no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("show")
def config_show(json: Json = False) -> None:
    """The settings the daemon runs with, and where each came from: a line of its file, the
    default, or this machine."""
    from gq.cli.config_cmd import print_settings

    report = call("config")
    output.print_json(report) if json else print_settings(report)


@config_app.command("check")
def config_check(
    file: Annotated[Optional[str], typer.Argument(
        help="the file [default: the one the daemon reads]", metavar="FILE",
        show_default=False)] = None,
) -> None:
    """Check a configuration file as the daemon does when it starts, without starting one."""
    from gq.cli.config_cmd import check_file

    print(check_file(file))


def run(argv: list[str]) -> int:
    """Run the app; usage errors become one `gq: ` line with exit code 2."""
    try:
        result = app(args=argv, prog_name="gq", standalone_mode=False)
    except typer.TyperException as e:  # click's usage errors, vendored by Typer
        ctx = getattr(e, "ctx", None)
        if type(e).__name__ == "NoArgsIsHelpError":
            print(e.format_message())
            return 0
        where = ctx.command_path if ctx else "gq"
        message = e.format_message().splitlines()[0].rstrip(".")
        message = message[:1].lower() + message[1:]
        raise GqError(f"{message} (see {where} --help)", BAD_INPUT) from None
    except typer.Abort:
        return 130
    except typer.Exit as e:
        return e.exit_code
    return result if isinstance(result, int) else 0

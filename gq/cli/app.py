"""The Typer app: every command's options, help and completion. Commands stay thin."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from gq.cli import output
from gq.cli.client import call, submit_job
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
daemon_app = typer.Typer(help="The per-host daemon (the CLI starts a daemon of your own on first "
                         "use, unless the host runs a system daemon for everyone).",
                         no_args_is_help=True)
app.add_typer(daemon_app, name="daemon")
app.add_typer(reserve_app, name="reserve")

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
    all: Annotated[bool, typer.Option("--all", "-a", help="also ended jobs")] = False,
    user: Annotated[Optional[str], typer.Option("--user", "-u", help="only this user's")] = None,
    state: Annotated[Optional[list[str]], typer.Option("--state", "-s", help="only jobs in "
                     "this state (repeatable)")] = None,
    start: Annotated[bool, typer.Option("--start", help="show when pending jobs with a "
                     "reservation are expected to start")] = False,
    expand: Annotated[bool, typer.Option("--expand", "-e", help="one line per element of an "
                      "array or sweep, instead of one per array")] = False,
    all_hosts: AllHosts = None,
    json: Json = False,
) -> None:
    """List jobs: pending and running ones, or all with --all. Pending ones show a reason.
    An array is one line, with its elements counted by state (see --expand)."""
    from gq.cli.peers_cmd import hosts_arg, split_hosts

    jobs = split_hosts(call("list", all=all, user=user, states=state or [], brief=not json,
                            hosts=hosts_arg(all_hosts)), "jobs")
    if json:
        return output.print_json(jobs)
    from gq.cli.arrays_view import table_rows

    headers, rows = table_rows(jobs, with_start=start, expand=expand,
                               listed_all=all or bool(state))
    print(output.table(headers, rows))


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
    from gq.cli.arrays_view import fold_results

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
def wait(ids: Ids) -> int:
    """Block until the jobs end; exit with the (first failing) job's exit code."""
    from gq.cli.client import wait_for_jobs

    from gq.cli.arrays_view import fold_waited

    jobs = wait_for_jobs(ids)
    print("\n".join(fold_waited(jobs)))
    code = 0
    for j in jobs:
        exit_code = j["exit_code"]
        if code == 0 and j["state"] != "completed":
            code = exit_code if exit_code not in (None, 0) else 1
    return code


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


@app.command("top")
def top(
    interval: Annotated[float, typer.Option("--interval", help="seconds between refreshes",
                        metavar="S", min=0.2)] = 1.0,
) -> None:
    """The interactive terminal UI: every card's memory by job, the queue and the offenders
    (keys: docs/top.md, or ? inside)."""
    from gq.cli.demo import run_top

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
        "fits, no reservations), or all", metavar="POLICY")] = "gq",
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
    json: Json = False,
) -> int:
    """Replay a job trace offline on a described cluster, with the daemon's policy code."""
    from gq.cli.sim_cmd import run_sim

    return run_sim(trace, cluster, policy, fmt, time_factor, cpus_per_host, from_history, json,
                   preempt, lab, time_model, learn)
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


@completion_app.command("script")
def completion_script(shell: Annotated[str, typer.Argument(
        help="bash, zsh or fish", metavar="SHELL", show_default=False)]) -> None:
    """Print one shell's completion script, e.g. source <(gq completion script bash)."""
    from gq.cli.completion import SHELLS, script

    if shell not in SHELLS:
        raise GqError(f"{shell}: expected one of {', '.join(SHELLS)}", BAD_INPUT)
    sys.stdout.write(script(shell))


@daemon_app.command("run")
def daemon_run(
    system: Annotated[bool, typer.Option("--system", help="as root: the one daemon of every "
                      "user of this host (state in /var/lib/gq, socket /run/gq/gq.sock, "
                      "settings in /etc/gq/config.toml; see docs/admin.md)")] = False,
) -> int:
    """Run the daemon in the foreground (logs to stderr)."""
    from pathlib import Path

    from gq.daemon.main import run
    from gq.paths import gq_home

    return run(None if system else Path(gq_home()), system=system)


@daemon_app.command("start")
def daemon_start() -> None:
    """Start your own daemon in the background, if it is not running."""
    from gq.cli.client import start_daemon, try_connect
    from gq.paths import daemon_socket

    path, home = daemon_socket()
    conn = try_connect(path)
    if conn is not None:
        with conn:
            info = conn.call("ping")
        print(f"already running (pid {info['pid']}, {info['home']})")
        return
    if home is None:
        raise GqError(f"this host is set up for a system daemon ({path}), which systemd starts "
                      "(systemctl start gq); set GQ_HOME to run a daemon of your own")
    print(f"started (pid {start_daemon(home)}, {home})")


@daemon_app.command("stop")
def daemon_stop() -> None:
    """Stop the daemon. Running jobs keep running; the next daemon re-adopts them."""
    from gq.cli.client import connect

    with connect(auto_start=False) as conn:
        pid = conn.call("ping")["pid"]
        result = conn.call("shutdown")
    from gq.cli.daemon_ctl import wait_gone

    wait_gone(pid)
    print(f"stopped (pid {pid}); {result['running_jobs']} running job(s) keep running")


@daemon_app.command("restore")
def daemon_restore(backup: Annotated[Optional[str], typer.Argument(
        help="a backup file  [default: the newest in $GQ_HOME/backups]", metavar="BACKUP",
        show_default=False)] = None) -> None:
    """Put a backup in place of a damaged database (the daemon must be stopped); the damaged
    file is kept beside it."""
    from gq.cli.daemon_ctl import restore_backup

    print(restore_backup(backup))


@daemon_app.command("status")
def daemon_status(json: Json = False) -> int:
    """Whether the daemon runs, where, with which cards."""
    from gq.cli.client import try_connect
    from gq.paths import daemon_socket

    path, home = daemon_socket()
    conn = try_connect(path)
    if conn is None:
        print(f"not running ({home or f'the system daemon, {path}'})")
        return 3
    with conn:
        info = conn.call("ping")
    if json:
        output.print_json(info)
    else:
        who = "the system daemon for every user, " if info.get("system") else ""
        print(f"running: {who}pid {info['pid']}, {info['home']}, gq {info['version']}, "
              f"{info['gpus']} {info['backend']} GPU(s) on {info['host']}")
    return 0


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

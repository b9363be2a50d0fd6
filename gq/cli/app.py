"""The Typer app: every command's options, help and completion. Commands stay thin."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from gq.cli import output
from gq.cli.client import call
from gq.cli.commands import COMMANDS
from gq.cli.daemon_cmd import daemon_app
from gq.cli.reserve_cmd import reserve_app
from gq.cli.typer_table import typer_command
from gq.protocol import BAD_INPUT, GqError
from gq.protocol.op_names import Op

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


Json = Annotated[bool, typer.Option("--json", help="print JSON (a stable schema)")]


# The hot commands: made from the command table (gq/cli/commands.py), which the light path
# (gq/cli/light.py) parses with; what they do is in gq/cli/jobs_cmd.py.
def _hot(name: str, alias: str | None = None):
    cmd = COMMANDS[name]
    command = typer_command(cmd)
    settings = {} if cmd.interspersed else {"allow_interspersed_args": False}
    app.command(name, context_settings=settings)(command)
    if alias is not None:
        app.command(alias, context_settings=settings, help=f"Alias of {name}.")(command)
    return command


_hot("submit", alias="add")
_hot("run")
_ls = _hot("ls")
_hot("clean")
app.command("ps", help="Alias of ls.")(_ls)  # listed after clean, as it always was
for _name in ("show", "why", "logs", "cancel", "hold", "release", "requeue", "update", "wait",
              "gpus", "offenders"):
    _hot(_name)


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
    figures = call(Op.STATS, since=seconds)
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
    commands and actions as tools, as you (docs/agents.md). Needs pip install 'gq-gpu[mcp]'."""
    from gq.cli.mcp_server import serve

    serve()


@app.command("fairshare")
def fairshare(json: Json = False) -> None:
    """Fair share, as Slurm's sshare: each account's and user's share, decayed usage and the
    factor their waiting jobs get, so you can tell why one job goes before another."""
    found = call(Op.FAIRSHARE)
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
        "--learn", help="plan jobs by their run time learned from earlier runs of the same "
        "user, name and GPUs where it is shorter than their time limit (or they have none), "
        "as the daemon does")] = False,
    cpus_per_host: Annotated[int, typer.Option(
        "--cpus-per-host", help="CPU cores of each simulated host", metavar="N")] = 128,
    from_history: Annotated[bool, typer.Option(
        "--from-history", help="replay this host's own ended jobs instead of a file")] = False,
    preempt: Annotated[Optional[str], typer.Option(
        "--preempt", help="the gq policy preempts jobs of these tiers for higher-tier work "
        "(low, or normal,low), with the daemon's default exempt 10m and grace 60s",
        metavar="TIERS", show_default=False)] = None,
    lab: Annotated[Optional[str], typer.Option(
        "--config", help="the daemon's whole config.toml ([scheduler], [limits], [pools], "
        "[accounts], [preemption]; what a replay does not use is named), plus admin "
        "[[reservations]] (docs/sim.md)", metavar="FILE",
        show_default=False)] = None,
    host_lab: Annotated[bool, typer.Option(
        "--lab", help="as --config, with the config.toml of this host's daemon")] = False,
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
    from gq.cli.sim_cmd import freezing_of, lab_file, run_sim

    lab = lab_file(lab, host_lab)
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

    report = call(Op.CONFIG)
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
        if type(e).__name__ == "NoSuchOption" and ctx is not None:  # as gq submit says it
            flags = ["--help", *(f for p in ctx.command.params
                                 for f in (*getattr(p, "opts", ()),
                                           *getattr(p, "secondary_opts", ())))]
            message = (f"no such option: "
                       f"{e.option_name}{output.did_you_mean(e.option_name, flags)}")
        raise GqError(f"{message} (see {where} --help)", BAD_INPUT) from None
    except typer.Abort:
        return 130
    except typer.Exit as e:
        return e.exit_code
    return result if isinstance(result, int) else 0

"""`gq daemon`: run, start, stop, restart and reload the per-host daemon, restore its database,
and say whether it runs."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from gq.cli import output
from gq.protocol import GqError
from gq.protocol.op_names import Op

daemon_app = typer.Typer(help="The per-host daemon (the CLI starts a daemon of your own on first "
                         "use, unless the host runs a system daemon for everyone).",
                         no_args_is_help=True)
Json = Annotated[bool, typer.Option("--json", help="print JSON (a stable schema)")]


@daemon_app.command("run")
def daemon_run(
    system: Annotated[bool, typer.Option("--system", help="as root: the one daemon of every "
                      "user of this host (state in /var/lib/gq, socket /run/gq/gq.sock, "
                      "settings in /etc/gq/config.toml; see docs/admin.md)")] = False,
) -> int:
    """Run the daemon in the foreground (logs to stderr)."""
    from gq.daemon.main import run_for

    return run_for(system)


@daemon_app.command("start")
def daemon_start() -> None:
    """Start your own daemon in the background, if it is not running."""
    from gq.cli.client import start_daemon, try_connect
    from gq.paths import daemon_socket

    path, home = daemon_socket()
    conn = try_connect(path)
    if conn is not None:
        with conn:
            info = conn.call(Op.PING)
        print(f"already running (pid {info['pid']}, {info['home']})")
        return
    if home is None:
        raise GqError(f"this host is set up for a system daemon ({path}), which systemd starts "
                      "(an admin: systemctl start gq)")
    print(f"started (pid {start_daemon(home)}, {home})")


@daemon_app.command("stop")
def daemon_stop() -> None:
    """Stop the daemon. Running jobs keep running; the next daemon re-adopts them."""
    from gq.cli.client import connect

    with connect(auto_start=False) as conn:
        pid = conn.call(Op.PING)["pid"]
        result = conn.call(Op.SHUTDOWN)
    from gq.cli.daemon_ctl import wait_gone

    wait_gone(pid)
    print(f"stopped (pid {pid}); {result['running_jobs']} running job(s) keep running")


@daemon_app.command("reload")
def daemon_reload() -> None:
    """Apply config.toml again without touching running jobs (as SIGHUP does), listing what
    changed; a file that does not load is refused and the old settings kept."""
    from gq.cli.client import connect

    with connect(auto_start=False) as conn:
        result = conn.call(Op.RELOAD)
    applied = result["changes"]
    print(f"reloaded {result['file']}: "
          + (f"{len(applied)} change(s) applied" if applied else "no changes applied"))
    for line in applied + result["at_restart"]:
        print(f"  {line}")


@daemon_app.command("restart")
def daemon_restart() -> None:
    """Stop the daemon and start it again, to apply everything in config.toml (running jobs
    keep running and are re-adopted)."""
    from gq.cli.daemon_ctl import restart

    print(restart())


@daemon_app.command("restore")
def daemon_restore(backup: Annotated[Optional[str], typer.Argument(
        help="a backup file  [default: of those in $GQ_HOME/backups with the most jobs, the "
             "newest]", metavar="BACKUP",
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
        info = conn.call(Op.PING)
    if json:
        output.print_json(info)
    else:
        who = "the system daemon for every user, " if info.get("system") else ""
        print(f"running: {who}pid {info['pid']}, {info['home']}, gq {info['version']}, "
              f"{info['gpus']} {info['backend']} GPU(s) on {info['host']}")
        for warning in info.get("warnings", []):
            print(f"warning: {warning}")
    return 0

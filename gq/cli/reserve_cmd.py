"""`gq reserve`: admins keep cards for a user, a group or an account over a window of time."""

from __future__ import annotations

import time
from typing import Annotated, Optional

import typer

from gq.cli import output
from gq.cli.client import call
from gq.protocol import BAD_INPUT, GqError
from gq.protocol.op_names import Op

reserve_app = typer.Typer(
    help="Reserve cards for a user, group or account over a window (admins): no one else's job "
    "that would run into it starts on them. gq reserve --cards 2 --start 2026-12-01T09:00 "
    "--duration 8h --user ann",
    invoke_without_command=True, no_args_is_help=True)


def _seconds(flag: str, text: str) -> float:
    from gq.units import parse_duration, parse_iso

    try:
        if flag == "--start":
            return time.time() if text.strip().lower() == "now" else parse_iso(text.strip())
        return parse_duration(text)
    except ValueError as e:
        example = "an ISO time like 2026-12-01T09:00 (local) or ...Z (UTC), or now"
        raise GqError(f"{flag} {text}: " + (example if flag == "--start" else str(e)),
                      BAD_INPUT) from None


def _ids(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise GqError(f"--ids {text}: expected card indices, e.g. 0,1", BAD_INPUT) from None


@reserve_app.callback()
def reserve(
    ctx: typer.Context,
    cards: Annotated[Optional[int], typer.Option("--cards", help="how many cards",
                                                 metavar="N", show_default=False)] = None,
    ids: Annotated[Optional[str], typer.Option("--ids", help="which cards, e.g. 2,3 (instead "
                                               "of --cards)", metavar="LIST")] = None,
    start: Annotated[Optional[str], typer.Option("--start", help="when it begins: an ISO time "
                     "(local unless it ends in Z or an offset), or now", metavar="TIME")] = None,
    duration: Annotated[Optional[str], typer.Option("--duration", help="how long, e.g. 8h",
                                                    metavar="DUR")] = None,
    user: Annotated[Optional[str], typer.Option("--user", help="for this user's jobs",
                                                metavar="USER")] = None,
    group: Annotated[Optional[str], typer.Option("--group", help="for the jobs of this Unix "
                                                 "group's members", metavar="GROUP")] = None,
    account: Annotated[Optional[str], typer.Option("--account", help="for the jobs of this "
                       "account's users ([accounts] of config.toml)", metavar="NAME")] = None,
    pool: Annotated[Optional[str], typer.Option("--pool", help="take the cards from this pool",
                                                metavar="NAME")] = None,
    name: Annotated[Optional[str], typer.Option("--name", help="a label, e.g. the deadline",
                                                metavar="TEXT")] = None,
    json: Annotated[bool, typer.Option("--json", help="print JSON (a stable schema)")] = False,
) -> None:
    if ctx.invoked_subcommand is not None:
        return
    if start is None or duration is None:
        raise GqError("give --start and --duration (see gq reserve --help)", BAD_INPUT)
    made = call(Op.RESERVE, cards=cards, ids=None if ids is None else _ids(ids),
                start=_seconds("--start", start), duration=_seconds("--duration", duration),
                user=user, group=group, account=account, pool=pool, name=name)
    if json:
        return output.print_json(made)
    print(f"reservation {made['id']}: GPU {','.join(map(str, made['gpu_ids']))} for "
          f"{made['holder']['kind']} {made['holder']['name']}, {made['start']} to {made['end']}")


@reserve_app.command("ls")
def reserve_ls(
    all: Annotated[bool, typer.Option("--all", "-a", help="also those that have ended or were "
                                      "removed: the record of every reservation")] = False,
    json: Annotated[bool, typer.Option("--json", help="print JSON (a stable schema)")] = False,
) -> None:
    """The reservations that have not ended (every one ever made with --all)."""
    rows = call(Op.RESERVATIONS, all=all)
    if json:
        return output.print_json(rows)
    if not rows:
        print("no reservations")
        return
    print(output.table(["ID", "GPUS", "HOLDER", "START", "END", "STATE", "NAME", "BY"], [
        [str(r["id"]), ",".join(map(str, r["gpu_ids"])),
         f"{r['holder']['kind']} {r['holder']['name']}", r["start"], r["end"], r["state"],
         r["name"] or "-", r["created_by"] + (f", removed by {r['removed_by']}"
                                               if r.get("removed_by") else "")]
        for r in rows]))


@reserve_app.command("rm")
def reserve_rm(ids: Annotated[list[int], typer.Argument(help="reservation ids (gq reserve ls)",
                                                        metavar="ID...")]) -> None:
    """Remove reservations (admins)."""
    for rid in ids:
        gone = call(Op.UNRESERVE, id=rid)
        print(f"removed reservation {gone['id']}")

"""What a `gq run` asks of the queue (docs/run.md): its channel checked, and the policy of an
attached job: interactive where the lab has an interactive pool with a max_time (or a --time is
given), never preempted unless asked, and named `run:...` so that `gq ls` marks it."""

from __future__ import annotations

from typing import Any

from gq.job_request import HostLimits, flag_arg
from gq.protocol import BadInput
from gq.protocol.attach import valid_key

RUN_MARK = "run:"


def attached_args(args: dict[str, Any], host: HostLimits) -> tuple[dict[str, Any], dict | None]:
    """The submit's arguments with an attached job's defaults, and its `attach` (None: a
    batch job)."""
    attach = args.get("attach")
    if attach is None:
        return args, None
    if not isinstance(attach, dict) or not valid_key(attach.get("key")):
        raise BadInput("attach: expected {\"key\": 32 hex digits, \"tty\": bool, ...}")
    if args.get("host") not in (None, "local", host.name):
        raise BadInput(f"gq run --host {args['host']}: not yet; run on this host, or `gq "
                       "submit --host` and `gq logs -f`")
    if args.get("array") is not None or args.get("sweep"):
        raise BadInput("gq run takes one job: no --array or --sweep (gq submit takes them)")
    checked = {"key": attach["key"],
               "tty": bool(flag_arg(attach, "tty", "attach.tty")),
               "no_hangup": bool(flag_arg(attach, "no_hangup", "--no-hangup")),
               "log": bool(flag_arg(attach, "log", "--log"))}
    args = dict(args)
    if args.get("interactive") is None:
        pool = host.pools.get(host.pools.interactive_name())
        limited = (pool is not None and pool.interactive and pool.max_time is not None
                   and args.get("gpus", 1) != 0)
        args["interactive"] = limited or args.get("time_limit") is not None
    args.setdefault("preemptible", False)  # never stopped for other work unless asked
    return args, checked


def run_name(name: str) -> str:
    return name if name.startswith(RUN_MARK) else f"{RUN_MARK}{name}"

"""Turn a submit request into a Job, or refuse it with one line naming the bad option."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from gq.daemon.attached_job import attached_args, run_name
from gq.job_request import HostLimits, flag_arg, int_arg, request_fields
from gq.model import DepKind, Job, JobState, Reason, parse_preempt_mode
from gq.protocol import BadInput
from gq.units import format_duration, parse_signal

__all__ = ["Caller", "HostLimits", "build_job", "check_key"]

MAX_NAME = 64
MAX_KEY = 128


@dataclass(frozen=True)
class Caller:
    uid: int
    user: str
    pid: int = 0  # the process that connected (SO_PEERCRED); 0: not known (a peer's request)


def _no_nul(text: str, what: str) -> str:
    if not isinstance(text, str):
        raise BadInput(f"{what}: expected text")
    if "\0" in text:
        raise BadInput(f"{what} contains a NUL byte")
    return text


def _utf8(text: str, what: str) -> str:
    """Text stored as such (not as JSON, as the command and environment are) must be UTF-8:
    bytes that are not arrive as lone surrogates, which SQLite cannot take."""
    try:
        text.encode()
    except UnicodeEncodeError:
        raise BadInput(f"{what} {text!r}: not valid UTF-8") from None
    return text


def check_name(name: str) -> str:
    _utf8(_no_nul(name, "--name"), "--name")
    if len(name) > MAX_NAME:
        raise BadInput(f"--name: {len(name)} characters, at most {MAX_NAME} allowed")
    if "/" in name:
        raise BadInput(f"--name {name!r}: must not contain '/'")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise BadInput(f"--name {name!r}: must not contain control characters")
    return name


def check_key(args: dict[str, Any]) -> str | None:
    """The submit's idempotency key: a client that lost the answer sends it again."""
    key = args.get("idempotency_key")
    if key is not None and (not isinstance(key, str) or not 0 < len(key) <= MAX_KEY
                            or not key.isprintable()):
        raise BadInput(f"idempotency_key: expected 1 to {MAX_KEY} printable characters")
    return key


def check_command(command: Any) -> list[str]:
    if not isinstance(command, list) or not command or command[0] == "":
        raise BadInput("no command given: gq submit [OPTIONS] -- COMMAND [ARGS...]")
    return [_no_nul(arg, "the command") for arg in command]


def check_deps(args: dict[str, Any], resolve) -> dict[DepKind, list[int]]:
    deps: dict[DepKind, list[int]] = {}
    for kind in DepKind:
        ids = args.get(str(kind)) or []
        if not isinstance(ids, list):
            raise BadInput(f"--{kind}: expected a list of job ids")
        if ids:
            deps[kind] = [resolve(str(i), f"--{kind}") for i in ids]
    return deps


def check_preemption(args: dict[str, Any], gpus: int, time_limit: float | None,
                     default_grace: float) -> dict[str, Any]:
    """The checkpoint signal, grace and out-of-memory retries, checked against each other."""
    out: dict[str, Any] = {"signal_group": bool(flag_arg(args, "signal_group", "--signal-group"))}
    try:
        out["signal"] = parse_signal(str(args.get("signal") or "SIGTERM"))
    except ValueError as e:
        raise BadInput(f"--signal {e}") from None
    before = args.get("signal_before")
    if before is not None:
        if isinstance(before, bool) or not isinstance(before, (int, float)) or before <= 0:
            raise BadInput(f"--signal @{before!r}: the time before the limit must be positive")
        shown = f"--signal {out['signal'][3:]}@{format_duration(before)}"
        if time_limit is None:
            raise BadInput(f"{shown}: needs --time, the limit it is sent before")
        if before >= time_limit:
            raise BadInput(f"{shown}: must be shorter than --time {format_duration(time_limit)}")
        out["signal_before"] = float(before)
    grace = args.get("grace", default_grace)
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or grace < 0:
        raise BadInput(f"--grace {grace!r}: must be 0 or more seconds")
    out["grace"] = float(grace)
    retry = int_arg(args, "retry_oom", "--retry-oom", 0)
    if retry < 0:
        raise BadInput(f"--retry-oom {retry}: must be 0 or more")
    if retry and gpus == 0:
        raise BadInput("--retry-oom retries with more GPU memory and needs --gpus 1 or more")
    out["retry_oom"] = retry
    if args.get("preempt_mode") is not None:
        try:
            out["preempt_mode"] = parse_preempt_mode(args["preempt_mode"])
        except ValueError as e:
            raise BadInput(str(e)) from None
    return out


# Programs that run a script named by their first argument: the job is named for the script,
# as Slurm names a batch job for its script (`python train.py` is `train.py`).
_INTERPRETERS = re.compile(r"(python|pypy)[\d.]*|(ba|z|da|k)?sh|perl|ruby|node|Rscript|julia|"
                           r"torchrun|deepspeed|accelerate|uv|poetry")
_TAKES_VALUE = {"-W", "-X", "-o", "-O", "--nproc_per_node", "--nproc-per-node", "--nnodes",
                "--num_processes", "--num_gpus", "--config_file"}


def default_name(command: list[str]) -> str:
    """The script an interpreter runs (`train.py`), the module of `python -m pkg.mod`
    (`pkg.mod`), else the program (`sh` for `sh -c '...'`)."""
    program = os.path.basename(command[0]) or command[0]
    if program == "gq" and len(command) > 1:  # gq burn: burn
        return command[1]
    if not _INTERPRETERS.fullmatch(program):
        return program
    words = iter(command[1:])
    for word in words:
        if word in ("-m", "--module"):
            return next(words, program)
        if word == "-c" or word == "--":
            return program
        if word in ("run", "launch") and program in ("uv", "poetry", "accelerate"):
            continue
        if word in _TAKES_VALUE:
            next(words, None)
        elif not word.startswith("-"):
            return os.path.basename(word) or program
    return program


def build_job(args: dict[str, Any], caller: Caller, host: HostLimits, resolve, now: float,
              cwd_here: bool = True) -> Job:
    """`resolve(text, flag)` turns '12' or '@' into an existing job id, or raises BadInput.
    cwd_here=False: the directory is on another host (a job waiting to be sent to a peer)."""
    command = check_command(args.get("command"))
    args, attach = attached_args(args, host)
    if args.get("name"):
        name = check_name(args["name"])
    else:
        base = default_name(command)
        name = "".join(c for c in base if c.isprintable() and c != "/")[:MAX_NAME]
        if attach is not None:
            name = run_name(name)[:MAX_NAME]
    fields = request_fields(args, host)
    cwd = _utf8(_no_nul(args.get("cwd") or "", "--cwd"), "--cwd")
    # Only a daemon running as the caller looks: a system daemon would look with root's
    # rights and tell anyone whether any path exists. Its jobs' shims enter the directory
    # as their user, and say so when they cannot (the CLI checked it too, as the user).
    if not os.path.isabs(cwd) or (cwd_here and caller.uid == os.geteuid()
                                  and not os.path.isdir(cwd)):
        raise BadInput(f"--cwd {cwd!r}: no such directory")
    env = args.get("env") or {}
    if not isinstance(env, dict):
        raise BadInput("env: expected an object")
    # Each looked at one by one only when one is wrong: a few dozen variables a submit.
    for key in [k for k, v in env.items() if not (type(k) is str and type(v) is str)
                or "\0" in k or "\0" in v]:
        _no_nul(key, "an environment variable name")
        _no_nul(env[key], f"environment variable {key}")
    held = bool(args.get("hold"))
    umask = args.get("umask")
    if umask is not None and (isinstance(umask, bool) or not isinstance(umask, int)
                              or not 0 <= umask <= 0o777):
        raise BadInput(f"umask {umask!r}: expected a number from 0 to 0o777")
    preemptible = flag_arg(args, "preemptible", "--preemptible")
    return Job(
        id=0,
        user=caller.user,
        uid=caller.uid,
        host=host.name,
        command=command,
        cwd=cwd,
        state=JobState.HELD if held else JobState.PENDING,
        # Until the next scheduling pass (at once, unless the daemon is flooded): jobs ahead.
        reason=Reason.HELD if held else Reason.PRIORITY,
        name=name,
        **fields,
        deps=check_deps(args, resolve),
        env={str(k): str(v) for k, v in env.items()},
        submitted_at=now,
        umask=umask,
        preemptible=(str(fields["priority"]) in host.preemptible_tiers if preemptible is None
                     else preemptible),
        **check_preemption(args, fields["gpus"], fields["time_limit"], host.grace),
        attach=attach,
    )



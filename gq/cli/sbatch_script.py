"""`gq submit SCRIPT` with `#SBATCH` lines: the script's verdicts said or refused, the lab's
`[slurm_compat]` read, the precedence CLI > `#GQ` > `#SBATCH`, and `--dry-run`'s report.
Light: tomllib only when a script has an #SBATCH block."""

from __future__ import annotations

import os
import sys
from typing import Any

from gq.protocol import BadInput
from gq.sbatch.options import Understood, understand


def _lab_settings() -> tuple[Any, str | None]:
    """([slurm_compat], the user's account in gq) from the config the daemon reads."""
    import tomllib
    from pathlib import Path

    from gq.cli.config_cmd import default_file
    from gq.sbatch.compat import SlurmCompat, parse_compat

    try:
        data = tomllib.loads(Path(default_file()).read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return SlurmCompat(), None
    try:
        compat = parse_compat(data.get("slurm_compat", {}))
    except ValueError as e:
        raise BadInput(f"{default_file()}: {e}") from None
    user = _user()
    account = None
    for name, table in (data.get("accounts") or {}).items():
        if isinstance(table, dict) and user in (table.get("users") or ()):
            account = name
    return compat, account


def _user() -> str | None:
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return None


def read_sbatch(path: str, header: list[str], to_peer: bool = False) -> Understood:
    """The script's #SBATCH block understood (the caller saw an #SBATCH line in it);
    BadInput on a refusal, unless the job goes to a peer (`--host NAME`): a Slurm peer runs
    what one host cannot (`--nodes=2`), so the daemon refuses it only for another host."""
    compat, account = _lab_settings()
    u = understand(os.path.basename(path), header, compat, _user(), account)
    if u.refusals and not to_peer:
        raise BadInput(u.refusals[0].sentence(u.script))
    return u


# What gq submit always sends, given on its command line or not.
_ALWAYS_SENT = ("command", "cwd", "env", "umask", "hold", "priority", "host")


def peer_script(u: Understood, given: dict[str, Any], cli_args: dict[str, Any]) -> dict:
    """What a Slurm peer needs to send the author's script as written (docs/slurm.md): its
    #SBATCH lines, the request's fields set on gq's command line (those alone go on sbatch's
    command line), and the refusal a host that is not a Slurm peer answers."""
    fields = [k for k in cli_args if k not in _ALWAYS_SENT]
    fields += [k for k in ("hold", "priority") if given.get(k) not in (None, False)]
    out: dict[str, Any] = {"block": u.block, "given": sorted(fields)}
    if u.refusals:
        out["refused"] = u.refusals[0].sentence(u.script)
    return out


def say_warnings(u: Understood | None) -> None:
    for v in (u.warnings if u else ()):
        print(f"gq: {v.sentence(u.script)}", file=sys.stderr)


def apply_export(u: Understood | None, env: dict[str, str]) -> dict[str, str]:
    """--export=ALL (the default), NONE (a login's few variables) or VARS (ALL,A=1: yours
    and these; A,B=1: only these)."""
    text = (u.job.get("export") if u else None) or "ALL"
    if text.upper() == "ALL":
        return env
    items = [i for i in text.split(",") if i]
    keep_all = any(i.upper() == "ALL" for i in items)
    out = dict(env) if keep_all else {k: env[k] for k in LOGIN_VARS if k in env}
    for item in items:
        if item.upper() in ("ALL", "NONE"):
            continue
        key, eq, value = item.partition("=")
        if eq:
            out[key] = value
        elif key in env:
            out[key] = env[key]
    return out


LOGIN_VARS = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "GQ_HOME")


def dry_run(u: Understood | None, args: dict[str, Any]) -> None:
    """What gq understood, option by option, and the job it would queue; nothing queued."""
    from gq.units import format_duration, format_size

    for v in (u.verdicts if u else ()):
        print(f"{v.sentence(u.script)}  [{v.kind}]")
    if u and "gpus_from" not in u.job:
        print(f"{u.script}: asks for no GPU: {args.get('gpus', 0)} GPU (sbatch's default; "
              "--gpus N or [slurm_compat] default_gpus to change it)")
    parts = [f"gpus={args.get('gpus', 1)}", f"cpus={args.get('cpus', 1)}"]
    if args.get("ram"):
        parts.append(f"ram={format_size(args['ram'])}")
    if args.get("time_limit"):
        parts.append(f"time={format_duration(args['time_limit'])}")
    if args.get("signal_before"):
        parts.append(f"signal_before={format_duration(args['signal_before'])}")
    for key in ("name", "pool", "priority", "mail", "signal", "after", "afterok",
                "afternotok", "afterstart"):
        if args.get(key):
            value = args[key]
            parts.append(f"{key}={','.join(map(str, value)) if isinstance(value, list) else value}")
    if args.get("array"):
        parts.append(f"array={len(args['array']['indices'])} elements")
    print(f"gq would queue: {' '.join(parts)} -- {' '.join(args['command'])}")
    print("nothing queued (--dry-run)")


def job_facts(u: Understood, args: dict[str, Any]) -> str:
    """What the daemon needs of an sbatch job (its SLURM_* variables, -o/-e files), as JSON
    in the job's environment (GQ_SBATCH): it marks the job as one whose script has #SBATCH
    lines."""
    import json

    facts = {k: u.job[k] for k in ("output", "error", "open_mode", "signal_scope", "array")
             if k in u.job}
    facts["submit_dir"] = os.getcwd()
    return json.dumps(facts, separators=(",", ":"))

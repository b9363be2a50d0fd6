"""What the hot commands do: parse nothing, call the daemon, format. Run by the light path
(gq.cli.light) and by the Typer commands alike, with the keyword arguments that the command
table (gq.cli.commands) names. Import-light: what a command needs is imported when it runs.
"""

from __future__ import annotations

import sys

from gq.cli import output
from gq.cli.client import call
from gq.protocol import BAD_INPUT, GqError
from gq.protocol.op_names import Op


def submit(command: list[str] | None = None, **options) -> None:
    """Queue a job: `options` by their table names, as given (None or False: not given)."""
    from gq.cli.client import submit_job
    from gq.cli.directives import apply_script
    from gq.cli.submit_args import request_args

    values = {k: v for k, v in options.items() if v not in (None, False)}
    merged, argv, sbatch = apply_script(values, list(command or []))
    args = request_args(merged, argv)
    if sbatch is not None or values.get("dry_run"):  # the parser's ~25 ms: only when used
        from gq.cli import sbatch_script

        if sbatch is not None:
            args["env"] = sbatch_script.apply_export(sbatch, args["env"])
            args["env"]["GQ_SBATCH"] = sbatch_script.job_facts(sbatch, args)
            if values.get("host"):
                args["sbatch_script"] = sbatch_script.peer_script(
                    sbatch, values, request_args(values, argv))
        if values.get("dry_run"):
            return sbatch_script.dry_run(sbatch, args)
        sbatch_script.say_warnings(sbatch)
    job = submit_job(args)
    for note in job.get("notes", ()):
        output.say(f"gq: {note}", file=sys.stderr)
    output.print_json(job) if values.get("json") else print(job["id"])


def run(command: list[str] | None = None, **options) -> int:
    """Run a job in the foreground (gq/cli/run_cmd.py): `options` by their table names."""
    from gq.cli.run_cmd import run_job

    return run_job(list(command or []), {k: v for k, v in options.items()
                                          if v not in (None, False)})


def ls(all=False, user=None, state=None, last=None, since=None, start=False, expand=False,
       array=None, all_hosts=None, json=False) -> None:
    import gc

    from gq.cli import listing

    window = _ls_window(last, since)
    query = dict(all=all or bool(window), user=user, states=list(state or ()),
                 hosts=hosts_arg(all_hosts), **window)
    if array is not None:  # one array's elements, each on its line, whatever their state
        query["array"], expand = array, True
    # A listing makes a few objects a job and keeps them all to the end, which sets off the
    # cyclic collector again and again over the growing heap: a fifth of `gq ls --all`'s time
    # over 10,000 jobs. It makes no cycles; the collector is back once it is printed.
    collecting = gc.isenabled()
    gc.disable()
    try:
        if json:
            return listing.print_json_list(listing.list_jobs(**query))
        from gq.wording.arrays import fold

        # The default listing by lines: an array one line, counted by the daemon; the
        # recently ended beyond the last few, one line of counts.
        notes: list[str] = []
        by_lines = not (query["all"] or state or expand or array is not None)
        headers, jobs, rows, widths = listing.list_table(with_start=start, lines=by_lines,
                                                         notes=notes, **query)
        if any(jobs):  # arrays' elements: folded or labelled, their cells change
            widths = None
            rows = fold(jobs, rows, expand=expand, listed_all=all or bool(state) or bool(window))
        print(output.table(headers, rows, paint=output.state_painter(headers), widths=widths))
        for note in notes:
            print(note)
    finally:
        if collecting:
            gc.enable()


def _ls_window(last: int | None, since: str | None) -> dict:
    from gq.units import parse_duration

    window: dict = {} if last is None else {"last": last}
    if since is not None:
        try:
            window["since"] = parse_duration(since)
        except ValueError as e:
            raise GqError(f"--since {e}", BAD_INPUT) from None
    return window


def hosts_arg(all_hosts: bool | None) -> str | None:
    """--all-hosts: "all"; --this-host: "local"; neither: the daemon's [peers] all_hosts."""
    return None if all_hosts is None else ("all" if all_hosts else "local")


def clean() -> None:
    print(f"cleared {call('clean')['cleared']} ended job(s) from gq ls")


def show(id: str, json=False) -> None:
    job = call(Op.SHOW, id=id)
    if json:
        return output.print_json(job)
    from gq.cli.details import print_job

    print_job(job)


def why(id: str) -> None:
    output.say(call(Op.WHY, id=id)["why"])


def logs(id: str, follow=False, err=False) -> None:
    from gq.cli.logs import show_log

    show_log(id, follow=follow, stderr=err)


def _act(op: str, ids: list[str], **args) -> int:
    from gq.wording.arrays import fold_results

    failed = 0
    for ok, line in fold_results(call(op, ids=list(ids), **args)):
        output.say(line if ok else f"gq: {line}", file=sys.stdout if ok else sys.stderr)
        failed += not ok
    return 1 if failed else 0


def cancel(ids: list[str]) -> int:
    return _act(Op.CANCEL, ids)


def hold(ids: list[str]) -> int:
    return _act(Op.HOLD, ids)


def release(ids: list[str]) -> int:
    return _act(Op.RELEASE, ids)


def requeue(ids: list[str]) -> int:
    return _act(Op.REQUEUE, ids)


def update(ids: list[str], mem=None, gpus=None, cpus=None, ram=None, time=None, name=None,
           priority=None) -> int:
    from gq.cli.submit_args import update_args

    return _act(Op.UPDATE, ids, **update_args(mem=mem, gpus=gpus, cpus=cpus, ram=ram,
                                             time=time, name=name, priority=priority))


def wait(ids: list[str], timeout=None) -> int:
    from gq.wording.arrays import fold_waited, wait_status
    from gq.cli.client import wait_for_jobs
    from gq.units import parse_duration

    try:
        seconds = None if timeout is None else parse_duration(timeout, allow_zero=True)
    except ValueError as e:
        raise GqError(f"--timeout {e}", BAD_INPUT) from None
    jobs = wait_for_jobs(list(ids), timeout=seconds)
    print("\n".join(map(output.escape_controls, fold_waited(jobs))))
    return wait_status(jobs)


def gpus(all_hosts=None, json=False) -> None:
    cards = call(Op.GPUS, hosts=hosts_arg(all_hosts))
    if isinstance(cards, dict):  # every host's
        from gq.cli.hosts_view import print_hosts_gpus

        return output.print_json(cards["hosts"]) if json else print_hosts_gpus(cards["hosts"])
    if json:
        return output.print_json(cards)
    from gq.cli.details import print_gpus

    print_gpus(cards)


def offenders(all_hosts=None, json=False) -> None:
    import time

    from gq.cli.stats_cmd import print_offenders

    found = call(Op.OFFENDERS, hosts=hosts_arg(all_hosts))
    if isinstance(found, dict):  # every host's
        if json:
            return output.print_json(found["hosts"])
        from gq.cli.hosts_view import print_hosts_offenders

        return print_hosts_offenders(found["hosts"], time.time())
    if json:
        return output.print_json(found)
    print_offenders(found, time.time())

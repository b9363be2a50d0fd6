"""`gq ls`: ask the daemon for the jobs to list (placeholder: one answer)."""

from __future__ import annotations

from gq.cli import output
from gq.cli.client import call


def list_jobs(all: bool, user, states, hosts, json: bool, with_start: bool, **window):
    from gq.cli.hosts_view import split_hosts

    return split_hosts(call("list", all=all, user=user, states=states, brief=not json,
                            hosts=hosts, recent=not json, **window), "jobs")


def print_json_list(jobs) -> None:
    output.print_json(jobs)

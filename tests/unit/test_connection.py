"""A daemon that closes the connection as a request goes out: the command says so in one line
and fails; it never takes the broken socket for a closed stdout (`gq ls | head`), which ends
quietly with 0."""

from __future__ import annotations

import socket
import threading

import pytest

from gq.cli.entry import main
from gq.paths import socket_path
from gq.protocol import Connection, DaemonGone


def closing_daemon(home) -> threading.Thread:
    """A socket at GQ_HOME that takes one connection and closes it unanswered."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(socket_path(str(home)))
    server.listen(1)

    def serve():
        with server:
            conn, _ = server.accept()
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_a_request_to_a_closed_connection_is_the_daemon_gone(tmp_path):
    closer = closing_daemon(tmp_path)
    with Connection(socket_path(str(tmp_path)), timeout=5) as conn:
        closer.join(5)  # closed before the request is written
        with pytest.raises(DaemonGone):
            conn.call("cancel", ids=["1"])


def test_a_command_whose_daemon_closes_on_it_fails_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GQ_HOME", str(tmp_path))
    closing_daemon(tmp_path)
    with pytest.raises(SystemExit) as exit:
        main(["cancel", "1"])
    assert exit.value.code == 1
    assert capsys.readouterr().err == (
        "gq: the daemon closed the connection (see its log: gq daemon status)\n")


def test_ls_turns_the_collector_back_on_whatever_happens(tmp_path, monkeypatch, capsys):
    """`gq ls` builds its table with the cyclic collector off (gq/cli/jobs_cmd.py); run in a
    process that goes on (a test that runs the CLI in its own process), it must not leave it
    off, whether the listing is printed or fails."""
    import gc

    monkeypatch.setenv("GQ_HOME", str(tmp_path))
    closing_daemon(tmp_path)
    assert gc.isenabled()
    with pytest.raises(SystemExit):
        main(["ls", "--all"])
    assert gc.isenabled()

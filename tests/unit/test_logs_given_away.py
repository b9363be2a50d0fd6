"""`gq logs` and a log its job left empty, renamed to another job's (docs/daemon.md, How a job
runs): what the other job writes there is never printed as this job's output."""

from __future__ import annotations

import os

from gq.cli.logs import _copy_new


def test_a_log_given_to_another_job_is_not_printed_as_this_ones(tmp_path, capfd):
    path = tmp_path / "5.out"
    path.write_text("")
    fd = os.open(path, os.O_RDONLY)
    assert _copy_new(fd, str(path)) == 0
    os.rename(path, tmp_path / "6.out")  # job 5 ended with nothing: its file went to job 6
    (tmp_path / "6.out").write_text("job 6's output\n")
    assert _copy_new(fd, str(path)) == 0
    path.write_text("job 5's next run\n")  # its requeued run's own new log: not this file
    assert _copy_new(fd, str(path)) == 0
    assert capfd.readouterr().out == ""
    own = os.open(path, os.O_RDONLY)
    assert _copy_new(own, str(path)) == len("job 5's next run\n")
    assert capfd.readouterr().out == "job 5's next run\n"

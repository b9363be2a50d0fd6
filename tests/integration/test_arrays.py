"""Arrays (--array 0-15%4) and sweeps (--sweep lr=...): parsing, the throttle, and a real daemon."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.hosts import wait_for
from gq.arrayspec import MAX_ELEMENTS, parse_array, parse_sweep
from gq.model import ArrayPart, Job, JobState, Reason
from gq.policy.arrays import hold_back_throttled
from tests.support.jobs import gated

# ---- parsing ------------------------------------------------------------------------------


@pytest.mark.parametrize("spec, indices, limit", [
    ("0-3", [0, 1, 2, 3], None),
    ("0-15%4", list(range(16)), 4),
    ("1,3,5", [1, 3, 5], None),
    ("0-10:5", [0, 5, 10], None),
    ("7", [7], None),
    ("0-2,10-11%1", [0, 1, 2, 10, 11], 1),
    ("%4", None, 4),
])
def test_array_specs(spec, indices, limit):
    assert parse_array(spec) == {"indices": indices, "limit": limit}


@pytest.mark.parametrize("spec, message", [
    ("5-2", "the range 5-2 ends before it starts"),
    ("", "expected indices like"),
    ("a-b", "expected indices like"),
    ("-3", "expected indices like"),
    ("0-3%0", "1 or more"),
    ("0-3%x", "expected indices like"),
    ("1,1", "appears twice"),
    ("3:2", "a step goes after a range"),
    ("0-9:0", "a step goes after a range"),
    (f"0-{MAX_ELEMENTS}", f"at most {MAX_ELEMENTS}"),
    ("0-999999999999", "at most"),  # refused before a list that size is built
])
def test_bad_array_specs(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_array(spec)


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 20), st.integers(1, 5)),
                min_size=1, max_size=4), st.one_of(st.none(), st.integers(1, 9)))
def test_array_spec_round_trip(parts, limit):
    spans = [(a, a + n, step) for a, n, step in parts]
    text = ",".join(f"{a}-{b}:{s}" for a, b, s in spans) + ("" if limit is None else f"%{limit}")
    want = [i for a, b, s in spans for i in range(a, b + 1, s)]
    if len(set(want)) != len(want):
        with pytest.raises(ValueError, match="twice"):
            parse_array(text)
    else:
        assert parse_array(text) == {"indices": want, "limit": limit}


def test_sweep_specs():
    assert parse_sweep(["lr=1e-3,1e-4", "bs=32"]) == [["lr", ["1e-3", "1e-4"]], ["bs", ["32"]]]
    for bad, message in [("lr=", "no empty value"), ("lr", "KEY=VALUE"), ("=1,2", "KEY=VALUE"),
                         ("lr=1,,2", "no empty value"), ("l-r=1", "must be a name"),
                         ("lr=1,2,1", "a value is given twice")]:
        with pytest.raises(ValueError, match=message):
            parse_sweep([bad])
    with pytest.raises(ValueError, match="given twice"):
        parse_sweep(["lr=1", "lr=2"])
    with pytest.raises(ValueError, match="combinations"):
        parse_sweep(["a=" + ",".join(map(str, range(200))), "b=" + ",".join(map(str, range(60)))])


# ---- the throttle, as data ----------------------------------------------------------------


def element(job_id: int, index: int, state=JobState.PENDING, limit=2, array=1) -> Job:
    return Job(id=job_id, user="u", command=["x"], cwd="/", state=state,
               array=ArrayPart(array, index, 10, limit))


def test_the_throttle_lets_in_the_lowest_indices_beside_the_running_ones():
    running = [element(1, 0, JobState.RUNNING)]
    alone = Job(id=50, user="u", command=["y"], cwd="/")
    pending = [element(i + 1, i) for i in (3, 1, 2)] + [alone]
    kept, held_back = hold_back_throttled(pending, running)
    assert [j.id for j in kept] == [2, 50]  # index 1 fills the second slot; 50 is no array
    assert held_back == {4: Reason.ARRAY_LIMIT, 3: Reason.ARRAY_LIMIT}


def test_the_throttle_counts_each_array_alone_and_ignores_held_and_unlimited():
    pending = ([element(10 + i, i, array=10, limit=1) for i in range(3)]
               + [element(20 + i, i, array=20, limit=None) for i in range(3)]
               + [element(30, 0, JobState.HELD, array=30, limit=1)])
    kept, held_back = hold_back_throttled(pending, [])
    assert set(held_back) == {11, 12}
    assert {j.id for j in kept} == {10, 20, 21, 22, 30}


# ---- a real daemon ------------------------------------------------------------------------


def running_elements(host, array_id: int) -> list[dict]:
    return [j for j in host.call("list")["jobs"] if j["array"] and j["array"]["id"] == array_id
            and j["state"] == "running"]


def test_an_array_runs_every_index_and_never_more_than_its_limit(make_host):
    host = make_host("4x80G", cpus=16)
    gates = host.work / "gates"
    gates.mkdir()
    # Each element waits for its own gate file, so the test decides when each one ends.
    script = (f'echo "$GQ_ARRAY_INDEX $GQ_ARRAY_ID $GQ_ARRAY_SIZE"; '
              f'while [ ! -e "{gates}/$GQ_ARRAY_INDEX" ]; do '
              f'[ -d "{gates}" ] || exit 99; sleep 0.02; done')
    array = host.submit("--array", "0-5%2", "--gpus", "0", "--", "sh", "-c", script)
    first = host.call("show", id=str(array))
    assert first["array"] == {"id": array, "index": 0, "size": 6, "limit": 2, "params": {}}
    wait_for(lambda: len(running_elements(host, array)) == 2, what="two running elements")
    waiting = [j for j in host.call("list")["jobs"] if j["state"] == "pending"]
    assert len(waiting) == 4 and {j["reason"] for j in waiting} == {"JobArrayTaskLimit"}
    assert "already runs 2 element(s)" in host.gq("why", f"{array}_5").stdout
    seen_running = set()
    for index in range(6):
        running = running_elements(host, array)
        assert len(running) <= 2
        seen_running |= {j["array"]["index"] for j in running}
        (gates / str(index)).touch()
        wait_for(lambda: host.job(f"{array}_{index}")["state"] == "completed",
                 what=f"element {index} to complete")
        # The slot it freed goes to the next index, and the limit still holds.
        assert len(running_elements(host, array)) <= 2
    assert seen_running == set(range(6))
    for index in range(6):
        job = host.job(f"{array}_{index}")
        assert job["id"] == array + index
        assert host.log(job["id"]).split() == [str(index), str(array), "6"]
    assert host.gq("wait", str(array)).stdout.strip() == f"array {array}: 6 completed"
    assert most_at_once(host, range(array, array + 6)) == 2


def most_at_once(host, ids) -> int:
    """The most jobs running at the same time, from their recorded starts and ends."""
    changes = []
    for job_id in ids:
        for e in host.job(job_id)["events"]:
            if e["new_state"] == "running" and e["old_state"] != "running":
                changes.append((e["at"], 1))
            elif e["old_state"] == "running" and e["new_state"] != "running":
                changes.append((e["at"], -1))
    running = peak = 0
    for _, change in sorted(changes, key=lambda c: (c[0], c[1])):  # ends first on ties
        running += change
        peak = max(peak, running)
    return peak


def test_a_sweep_queues_the_cartesian_product_with_values_filled_in(host):
    array = host.submit("--sweep", "lr=1e-3,1e-4", "--sweep", "bs=32,64", "--gpus", "0", "--",
                        "sh", "-c", 'echo lr={lr} bs={bs} $GQ_SWEEP_LR $GQ_ARRAY_INDEX')
    host.gq("wait", str(array))
    outputs = sorted(host.log(array + i).strip() for i in range(4))
    assert outputs == ["lr=1e-3 bs=32 1e-3 0", "lr=1e-3 bs=64 1e-3 1", "lr=1e-4 bs=32 1e-4 2",
                       "lr=1e-4 bs=64 1e-4 3"]
    # A command without {key} gets the values in its environment only.
    other = host.submit("--sweep", "seed=1,2", "--gpus", "0", "--", "sh", "-c",
                        "echo $GQ_SWEEP_SEED")
    host.gq("wait", str(other))
    assert [host.log(other + i).strip() for i in (0, 1)] == ["1", "2"]
    # A job submitted from inside an element inherits none of its array's variables.
    host.env.update(GQ_ARRAY_INDEX="7", GQ_SWEEP_LR="1e-3")
    inner = host.submit("--gpus", "0", "--", "sh", "-c", 'echo "[$GQ_ARRAY_INDEX$GQ_SWEEP_LR]"')
    assert host.wait_ended(inner)["state"] == "completed" and host.log(inner) == "[]\n"
    shown = host.gq("show", f"{array}_3").stdout
    assert f"element 3 ({array}_3) of array {array} (4 elements); lr=1e-4 bs=64" in shown
    assert host.count_jobs() == 7


def test_ls_folds_an_array_into_one_line_and_expand_unfolds_it(host):
    gate = host.work / "gate"
    single = host.submit("--hold", "-n", "alone", "--", "true")
    array = host.submit("--hold", "--array", "0-9%3", "-n", "sweep", "--gpus", "0", *gated(gate))
    host.gq("release", f"{array}_0", f"{array}_1")
    wait_for(lambda: len(running_elements(host, array)) == 2, what="two running elements")
    lines = host.gq("ls").stdout.splitlines()
    assert len(lines) == 3  # header, the single job, the array
    folded = next(line for line in lines if "sweep" in line)
    assert folded.startswith(f"{array}_[0-9%3] ")
    assert "2 running, 8 held" in folded and folded.endswith("Held")
    gate.touch()
    wait_for(lambda: "2 completed" in host.gq("ls", "--all").stdout, what="two elements to end")
    assert "8 held, 2 completed" in host.gq("ls", "--all").stdout
    folded = host.gq("ls").stdout.splitlines()[-1]  # recently ended elements are listed
    assert folded.startswith(f"{array}_[0-9%3] ") and "8 held, 2 completed" in folded
    host.gq("clean")  # the array's line spans the whole array (as squeue's), ended ones counted
    folded = host.gq("ls").stdout.splitlines()[-1]
    assert folded.startswith(f"{array}_[0-9%3] ") and "8 held, 2 completed" in folded
    unfolded = host.gq("ls", "--array", str(array)).stdout.splitlines()
    assert [line.split()[0] for line in unfolded[1:]] == [f"{array}_{i}" for i in range(10)]
    expanded = host.gq("ls", "--expand").stdout.splitlines()
    assert [line.split()[0] for line in expanded[1:]] == [str(single)] + [
        f"{array}_{i}" for i in range(2, 10)]
    listed = json.loads(host.gq("ls", "--json").stdout)
    assert len(listed) == 9 and listed[1]["array"]["index"] == 2


def test_cancel_hold_and_release_take_the_array_id(host):
    array = host.submit("--array", "0-3", "--hold", "--", "true")
    released = host.gq("release", f"{array}_1")
    assert released.stdout.strip() == f"job {array + 1}: released"
    host.wait_ended(array + 1)
    held = host.gq("hold", str(array))
    assert held.returncode == 0
    assert held.stdout.strip() == (f"array {array}: 3 already held, "
                                   "1 skipped: is completed; only pending jobs can be held")
    assert host.gq("release", str(array)).stdout.strip() == (
        f"array {array}: 3 released, 1 skipped: is completed, not held")
    cancelled = host.gq("cancel", str(array))
    assert cancelled.returncode == 0 and cancelled.stdout.startswith(f"array {array}: ")
    # an element that had started is stopping until its run is gone (docs/states.md)
    states = {host.wait_ended(array + i)["state"] for i in (0, 2, 3)}
    assert states <= {"cancelled", "completed"}
    # One element by name, already ended: an error, as for any job.
    again = host.gq("cancel", f"{array}_1", check=False)
    assert again.returncode == 1 and f"job {array + 1}: already completed" in again.stderr


def test_at_sign_and_dependencies_mean_the_whole_array(host):
    gate = host.work / "gate"
    array = host.submit("--array", "0-2", "--gpus", "0", *gated(gate))
    after = host.submit("--afterok", "@", "--gpus", "0", "--", "true")
    assert host.job(after)["deps"] == {"afterok": [array, array + 1, array + 2]}
    host.wait_reason(after, "Dependency")
    gate.touch()
    assert host.wait_ended(after)["state"] == "completed"


@pytest.mark.parametrize("argv, message", [
    (["--array", "5-2", "--", "true"], "--array 5-2: the range 5-2 ends before it starts"),
    (["--sweep", "lr=", "--", "echo", "{lr}"], "--sweep lr=: expected KEY=VALUE"),
    (["--array", "%2", "--", "true"], "--array: no indices given"),
    (["--array", "0-3", "--sweep", "a=1", "--", "echo", "{a}"], "takes only a limit"),
    (["--array", "0-3", "--mem", "81G", "--", "true"], "more than the cards"),
    (["--array", "0-3", "--after", "999", "--", "true"], "--after 999: no such job"),
])
def test_bad_arrays_are_one_line_exit_2_and_queue_nothing(host, argv, message):
    proc = host.gq("submit", *argv, check=False)
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith("gq: ") and message in line
    assert host.count_jobs() == 0


def test_an_array_is_queued_whole_or_not_at_all(tmp_path):
    from gq.store import Store

    store = Store(tmp_path / "gq.db")
    store.db.execute("CREATE TRIGGER boom BEFORE INSERT ON jobs WHEN NEW.array_index = 2 "
                     "BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    jobs = [Job(id=0, user="u", command=["x"], cwd="/", array=ArrayPart(0, i, 4))
            for i in range(4)]
    with pytest.raises(Exception, match="disk full"):
        store.insert_array(jobs, at=1.0)
    assert store.db.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0
    assert store.db.execute("SELECT count(*) FROM events").fetchone()[0] == 0
    assert store.queue() == []


MALFORMED = [
    ({"array": {"indices": [-1]}}, "--array: expected a list of indices"),
    ({"array": {"indices": "0-3"}}, "--array: expected a list of indices"),
    ({"array": {"indices": [1, 1]}}, "given twice"),
    ({"array": {"indices": [0], "limit": 0}}, "1 or more"),
    ({"array": {"indices": list(range(MAX_ELEMENTS + 1))}}, "at most"),
    ({"array": [0, 1]}, "--array: expected an object"),
    ({"sweep": [["lr", []]]}, "--sweep: expected KEY=VALUE"),
    ({"sweep": [["lr", ["1", "1"]]]}, "with different values"),
    ({"sweep": [["lr", ["1"]], ["lr", ["2"]]]}, "--sweep lr: given twice"),
    ({"sweep": [["l r", ["1"]]]}, "a key is a name"),
    ({"sweep": {"lr": ["1"]}}, "--sweep: expected a list"),
]


def test_the_daemon_checks_array_requests_itself(host):
    from gq.cli.submit_args import request_args
    from gq.protocol import BadInput

    for extra, message in MALFORMED:
        with pytest.raises(BadInput, match=message):
            host.call("submit", **request_args({}, ["echo", "{lr}"]), **extra)
    assert host.count_jobs() == 0

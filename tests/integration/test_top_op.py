"""The `top` operation: gq top's snapshot in one answer, the queue as what changed since the
client's cursor; the TUI's source applies it to what it had and draws what the old replies
drew."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from gq.model import Job, JobState
from gq.protocol import BadInput
from gq.store import Store
from gq.tui.source import DaemonSource


def test_the_store_tells_what_changed_since_a_version(tmp_path):
    store = Store(tmp_path / "gq.db")
    a, b, c = (store.insert_job(Job(id=0, user="ann", command=["x"], cwd="/"), 1.0)
               for _ in range(3))
    seen = store.version
    assert store.changes_since(seen) == []
    store.set_reasons({a: "Priority", b: None})  # b's reason is None already: no change
    store.transition(c, JobState.HELD, 2.0, reason="Held")
    assert [j.id for j in store.changes_since(seen)] == [c, a]  # the last changed first
    later = store.version
    store.end_waiting([store.queue()[0]], JobState.CANCELLED, 3.0, "cancelled")
    assert store.changes_since(later) == [] and store.version > later  # it left: no row
    assert store.changes_since(store.version + 5) is None  # not a version of this store
    store._load_cache()  # as after a rolled-back transaction
    assert store.changes_since(later) is None


def active(host) -> dict[int, tuple]:
    return {j["id"]: (j["state"], j["reason"], j["name"]) for j in host.call("list")["jobs"]}


def rows(answer) -> dict[int, tuple]:
    cols = answer["columns"]
    return {r[0]: (r[cols.index("state")], r[cols.index("reason")], r[cols.index("name")])
            for r in answer["rows"]}


def test_top_answers_everything_once_then_what_changed(host):
    held = [host.submit("--hold", "-g", "0", "-n", f"h{i}", "--", "true") for i in range(3)]
    array = host.submit("--hold", "-g", "0", "--array", "0-1", "--", "true")
    first = host.call("top")
    assert first["full"] and first["ids"] == [*held, array, array + 1]
    assert rows(first) == active(host)
    assert "command" not in first["columns"] and "env" not in first["columns"]
    assert [c["index"] for c in first["gpus"]] == [0, 1, 2, 3] and first["offenders"] == []

    quiet = host.call("top", cursor=first["cursor"])
    assert not quiet["full"] and quiet["rows"] == [] and quiet["ids"] is None

    host.gq("update", str(held[0]), "-n", "renamed")
    host.gq("cancel", str(held[1]))
    changed = host.call("top", cursor=quiet["cursor"])
    assert rows(changed) == {held[0]: ("held", "Held", "renamed")}
    assert changed["ids"] == [held[0], held[2], array, array + 1]

    other = host.call("top", cursor=["another daemon", 3])
    assert other["full"] and rows(other) == active(host)
    for bad in ({"cursor": "x"}, {"cursor": [1, 2]}, {"points_after": 1e300}):
        with pytest.raises(BadInput):
            host.call("top", **bad)


def seconds(jobs) -> list:
    """By id, times in whole seconds as the replies' ISO times give them (top: epoch)."""
    return sorted((replace(j, submitted_at=int(j.submitted_at), started_at=j.started_at and
                           int(j.started_at)) for j in jobs), key=lambda j: j.id)


def test_gq_tops_source_draws_from_top_what_the_replies_drew(host):
    held = [host.submit("--hold", "-g", "0", "-n", f"h{i}", "--", "true") for i in range(3)]
    running = host.submit("-g", "1", "-n", "burn", "--", "sleep", "30")
    host.wait_state(running, "running")
    source, replies = DaemonSource(str(host.home / "gq.sock")), DaemonSource(
        str(host.home / "gq.sock"))
    replies._top = False  # as with a daemon older than the top operation
    source.fetch(time.time())
    host.submit("--hold", "-g", "0", "-n", "new", "--", "true")
    host.gq("update", str(held[1]), "-n", "renamed")
    host.gq("cancel", str(running))
    host.wait_ended(running)
    now = time.time()
    new, old = source.fetch(now), replies.fetch(now)
    assert new.error is None and source._cursor is not None
    assert seconds(new.jobs) == seconds(old.jobs)
    assert {j.name for j in new.jobs} == {"h0", "renamed", "h2", "new"}
    assert [c.index for c in new.cards] == [c.index for c in old.cards]
    assert (new.user, new.simulated) == (old.user, old.simulated)

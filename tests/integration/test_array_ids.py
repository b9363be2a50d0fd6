"""An array's id in `gq why` and `gq logs` stands for the whole array, as in wait, cancel and
hold; elements are always named N_M, never by their internal job ids."""

from __future__ import annotations

from tests.support.jobs import gated


def test_why_and_logs_answer_for_the_whole_array_and_name_elements_n_m(host):
    gate = host.work / "gate"
    array = host.submit("--array", "0-3%1", "-g", "1", *gated(gate, echo='"element $GQ_ARRAY_INDEX"'))
    host.wait_state(array, "running")
    host.wait_reason(f"{array}_3", "JobArrayTaskLimit")

    why = host.gq("why", str(array)).stdout.splitlines()
    assert why[0] == f"Array {array}: 4 elements: 3 pending, 1 running."
    assert len(why) == 2 and why[1].startswith(f"Job {array}_1 is pending ("), why
    assert why[1].endswith(f" So is {array}_2, {array}_3."), why
    element = host.gq("why", f"{array}_3").stdout
    assert element.startswith(f"Job {array}_3 is pending"), element

    gate.touch()
    host.wait_ended(array)
    logs = host.gq("logs", str(array)).stdout
    assert logs == "".join(f"==> {array}_{i} (completed) <==\nelement {i}\n" for i in range(4))
    assert host.gq("logs", f"{array}_2").stdout == "element 2\n"
    assert f"job  {array}_2 (sh)" in host.gq("show", f"{array}_2").stdout
    ended = host.gq("why", f"{array}_2").stdout
    assert ended.startswith(f"Job {array}_2 ended as completed"), ended

"""What docs/ shows gq printing is what gq prints: every console block is run again, in order,
on a real daemon of simulated cards (tests/support/doc_output.py), or says why it is not."""

from __future__ import annotations

from tests.support.doc_output import blocks, differences, normalise, run_all, unmarked

REGENERATE = "python scripts/gen_doc_output.py (writes gq's real output into the docs)"


def test_every_console_block_of_the_docs_is_run_or_says_why_not():
    assert unmarked() == [], "mark each with <!-- doc-output: SESSION --> or not run (WHY)"


def test_the_output_pasted_in_the_docs_is_what_gq_prints():
    found = blocks()
    assert {b.path.name for b in found} >= {"quickstart.md", "completion.md", "arrays.md"}
    run_all(found)
    diffs = differences(found)
    assert not diffs, f"the docs drifted from gq; {REGENERATE}:\n\n" + "\n\n".join(diffs)


def test_a_drifted_block_is_found_and_only_times_pids_and_durations_are_forgiven(tmp_path):
    doc = tmp_path / "drift.md"
    doc.write_text("<!-- doc-output: drift -->\n```console\n"
                   "$ gq submit --array 5-2 -- true\n"
                   "gq: --array 5-2: the range ends before it starts\n```\n")
    found = blocks([doc])
    run_all(found)
    assert len(differences(found)) == 1  # the old wording, as docs/quickstart.md had 9 of
    assert normalise("job 1  running  1m00s  (pid 41) 2026-11-30T19:34:21Z") == \
        normalise("job 1 running   3s (pid 7) 2026-12-04T08:00:00Z")
    assert normalise("exit 3") != normalise("exit 3: unknown")

"""Trace readers for gq sim: the three formats, their mappings, skipped and bad rows, real files."""

from __future__ import annotations

import csv
import io
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gq.model import Tier
from gq.sim.traces import (
    FORMATS,
    REQUIRED_COLUMNS,
    SKIP_NEVER_RAN,
    Trace,
    TraceError,
    TraceJob,
    read_trace,
)

from tests.support.paths import ROOT
from tests.support.examples import examples

TRACES = ROOT.parent / "shared" / "traces"
GIB, MIB = 1 << 30, 1 << 20

ALIBABA_HEADER = ("job_id,submit_time,start_time,end_time,duration_s,queue_s,num_gpu,gpu_milli,"
                  "gpus_equiv,cpu_milli,memory_mib,qos,final_phase")
PHILLY_HEADER = "job_id,user,num_gpu,submit_time,duration_s,model_name,job_type"
GQ_HEADER = "submit_time,duration,gpus,mem,user,priority,cpus,time_limit,name"


def write(tmp_path: Path, text: str, name: str = "trace.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def by_id(trace: Trace) -> dict[str, TraceJob]:
    return {j.job_id: j for j in trace.jobs}


# ---- Alibaba openb ----------------------------------------------------------------------------

ALIBABA = f"""{ALIBABA_HEADER}
pod-c,300,300,400,100,0,8,1000,8.0,32000,65536,LS,Running
pod-b,100,101,161,60,1,1,250,0.25,3152,5600,BE,Failed
pod-p,150,,,,,1,1000,1.0,4000,8192,LS,Pending
pod-a,100,100,130,30,0,0,0,0,500,0,Burstable,Succeeded
pod-g,200,200,290,90,0,1,1000,1.0,0,1024,Guaranteed,Running
pod-m,400,400,500,100,0,2,500,2.0,8000,1024,LS,Running
"""


def test_alibaba_rows_become_jobs_with_the_documented_mappings(tmp_path):
    trace = read_trace(write(tmp_path, ALIBABA))
    assert trace.format == "alibaba"
    jobs = by_id(trace)
    assert set(jobs) == {"pod-a", "pod-b", "pod-c", "pod-g", "pod-m"}
    b = jobs["pod-b"]
    assert (b.submit_time, b.duration, b.gpus, b.gpu_fraction) == (100, 60, 1, 0.25)
    assert (b.cpus, b.ram, b.mem, b.user, b.tier) == (4, 5600 * MIB, None, "alibaba", Tier.LOW)
    c = jobs["pod-c"]  # a multi-GPU job has whole cards whatever gpu_milli says
    assert (c.gpus, c.gpu_fraction, c.cpus, c.ram, c.tier) == (8, None, 32, 64 * GIB, Tier.HIGH)
    a = jobs["pod-a"]  # CPU-only; 500 milli-cores round up to 1, 0 MiB is "not asked"
    assert (a.gpus, a.gpu_fraction, a.cpus, a.ram, a.tier) == (0, None, 1, None, Tier.NORMAL)
    g = jobs["pod-g"]  # a whole card (1000 milli) is not a fraction; 0 milli-cores -> 1 core
    assert (g.gpu_fraction, g.cpus, g.tier) == (None, 1, Tier.NORMAL)
    m = jobs["pod-m"]  # only single-GPU jobs share a card
    assert (m.gpus, m.gpu_fraction) == (2, None)


def test_alibaba_rows_that_never_ran_are_counted_not_returned(tmp_path):
    trace = read_trace(write(tmp_path, ALIBABA))
    assert trace.skipped == {SKIP_NEVER_RAN: 1}
    assert "pod-p" not in by_id(trace)
    assert trace.rows == 6


def test_jobs_are_sorted_by_submit_time_then_job_id(tmp_path):
    trace = read_trace(write(tmp_path, ALIBABA))
    assert [j.job_id for j in trace.jobs] == ["pod-a", "pod-b", "pod-g", "pod-c", "pod-m"]


# ---- Philly ----------------------------------------------------------------------------------

PHILLY = f"""{PHILLY_HEADER}
7,vc_b,4,10,600,resnet50,best
3,vc_a,1,5,196,resnet101,strict
9,vc_a,0,5,20,bert,strict
"""


def test_philly_rows_become_jobs_with_the_documented_mappings(tmp_path):
    trace = read_trace(write(tmp_path, PHILLY))
    assert trace.format == "philly" and trace.skipped == {}
    assert [j.job_id for j in trace.jobs] == ["3", "9", "7"]
    j3, j9, j7 = trace.jobs
    assert (j3.user, j3.gpus, j3.cpus, j3.tier, j3.name) == ("vc_a", 1, 4, Tier.HIGH, "resnet101")
    assert (j7.user, j7.gpus, j7.cpus, j7.tier, j7.duration) == ("vc_b", 4, 16, Tier.LOW, 600)
    assert (j9.gpus, j9.cpus) == (0, 1)
    assert all(j.gpu_fraction is None and j.mem is None and j.ram is None for j in trace.jobs)


def test_a_row_without_a_duration_is_skipped_in_every_format(tmp_path):
    trace = read_trace(write(tmp_path, PHILLY + "4,vc_a,1,7,,vgg16,best\n"))
    assert trace.skipped == {SKIP_NEVER_RAN: 1} and len(trace.jobs) == 3


# ---- gq's own format -------------------------------------------------------------------------

GQ = f"""{GQ_HEADER}
30,3600,2,20G,ann,high,8,2h,train-llm
0,60,1,,bob,low,1,,
30,600,0,,ann,normal,4,1d12h,prep
45,,1,,bob,normal,1,,cancelled-while-pending
0,5,,,cy,,,,
"""


def test_gq_rows_become_jobs_with_sizes_and_durations_parsed(tmp_path):
    trace = read_trace(write(tmp_path, GQ))
    assert trace.format == "gq"
    assert trace.skipped == {SKIP_NEVER_RAN: 1}
    jobs = {j.name: j for j in trace.jobs}
    llm = jobs["train-llm"]
    assert (llm.submit_time, llm.duration, llm.gpus, llm.mem) == (30, 3600, 2, 20 * GIB)
    assert (llm.user, llm.tier, llm.cpus, llm.time_limit) == ("ann", Tier.HIGH, 8, 7200)
    assert llm.gpu_fraction is None
    prep = jobs["prep"]
    assert (prep.gpus, prep.mem, prep.time_limit, prep.tier) == (0, None, 129600, Tier.NORMAL)
    # Empty gpus, cpus and priority take gq submit's defaults.
    defaults = next(j for j in trace.jobs if j.user == "cy")
    assert (defaults.gpus, defaults.cpus, defaults.tier, defaults.mem) == (1, 1, Tier.NORMAL, None)


def test_gq_job_ids_are_line_numbers_so_ties_keep_the_file_order(tmp_path):
    rows = "".join(f"0,1,1,,u{i},,,,\n" for i in range(12))  # lines 2..13, all at time 0
    trace = read_trace(write(tmp_path, GQ_HEADER + "\n" + rows))
    assert [j.user for j in trace.jobs] == [f"u{i}" for i in range(12)]
    assert trace.jobs[0].job_id == "02" and trace.jobs[-1].job_id == "13"


def test_gq_reads_the_optional_job_id_and_ram_columns(tmp_path):
    text = f"{GQ_HEADER},job_id,ram\n0,60,1,,ann,,,,,slurm-4411,64G\n1,60,1,,ann,,,,,,\n"
    jobs = read_trace(write(tmp_path, text)).jobs
    assert (jobs[0].job_id, jobs[0].ram) == ("slurm-4411", 64 * GIB)
    assert (jobs[1].job_id, jobs[1].ram) == ("3", None)


# ---- detection and headers -------------------------------------------------------------------

@pytest.mark.parametrize("text,fmt", [(ALIBABA, "alibaba"), (PHILLY, "philly"), (GQ, "gq")])
def test_auto_detects_each_format_and_an_explicit_format_agrees(tmp_path, text, fmt):
    path = write(tmp_path, text)
    assert read_trace(path).format == fmt
    assert read_trace(path, fmt=fmt).jobs == read_trace(path).jobs


@pytest.mark.parametrize("fmt", FORMATS)
def test_columns_may_come_in_any_order_with_extras_spaces_case_and_a_bom(tmp_path, fmt):
    source = {"alibaba": ALIBABA, "philly": PHILLY, "gq": GQ}[fmt]
    rows = list(csv.reader(io.StringIO(source)))
    order = list(reversed(range(len(rows[0]))))
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow([f" {rows[0][i].upper()} " for i in order] + ["comment"])
    for r in rows[1:]:
        w.writerow([r[i] for i in order] + ["anything"])
    shuffled = tmp_path / "shuffled.csv"
    shuffled.write_text("\ufeff" + out.getvalue())
    trace = read_trace(shuffled)
    assert trace.format == fmt
    original = read_trace(write(tmp_path, source))
    if fmt == "gq":  # job ids there are line numbers, which do not move
        assert trace.jobs == original.jobs
    else:
        assert trace.jobs == original.jobs and trace.skipped == original.skipped


def test_an_unknown_header_names_every_format_and_its_columns(tmp_path):
    path = write(tmp_path, "id,when,what\n1,2,3\n")
    with pytest.raises(TraceError) as err:
        read_trace(path)
    message = str(err.value)
    assert message.startswith(f"{path}:1: unrecognised header")
    for fmt in FORMATS:
        assert f"{fmt}: {','.join(REQUIRED_COLUMNS[fmt])}" in message


def test_an_explicit_format_names_the_columns_the_header_lacks(tmp_path):
    path = write(tmp_path, PHILLY)
    with pytest.raises(TraceError, match=r":1: alibaba format: the header lacks "
                                         r"gpu_milli, cpu_milli, memory_mib, qos;"):
        read_trace(path, fmt="alibaba")


def test_a_header_that_fits_two_formats_must_be_named(tmp_path):
    header = ALIBABA_HEADER + ",user,job_type"
    path = write(tmp_path, header + "\n")
    with pytest.raises(TraceError, match="fits several formats"):
        read_trace(path)
    assert read_trace(path, fmt="philly").jobs == ()


def test_an_unknown_format_name_is_refused():
    with pytest.raises(ValueError, match="unknown trace format 'csv'"):
        read_trace("whatever.csv", fmt="csv")


@pytest.mark.parametrize("text", ["", "\n \n", "\ufeff", ",,\n"])
def test_an_empty_file_is_an_error(tmp_path, text):
    path = write(tmp_path, text)
    with pytest.raises(TraceError, match=rf"^{path}:1: empty file"):
        read_trace(path)


def test_a_missing_or_binary_file_is_a_trace_error(tmp_path):
    with pytest.raises(TraceError, match=r"nope\.csv: No such file"):
        read_trace(tmp_path / "nope.csv")
    binary = tmp_path / "b.csv"
    binary.write_bytes(b"\xff\xfe\x00\x81garbage")
    with pytest.raises(TraceError, match="not a UTF-8 text file"):
        read_trace(binary)


def test_blank_lines_are_ignored_and_do_not_shift_line_numbers(tmp_path):
    text = f"\n{PHILLY_HEADER}\n  \n1,vc,1,0,10,m,strict\n,,,,,,\n2,vc,1,0,-1,m,best\n"
    path = write(tmp_path, text)
    with pytest.raises(TraceError, match=rf"^{path}:6: duration_s: '-1'"):
        read_trace(path)
    unknown = write(tmp_path, "\n\nid,when\n", "unknown.csv")
    with pytest.raises(TraceError, match=rf"^{unknown}:3: unrecognised header"):
        read_trace(unknown)


# ---- bad rows: PATH:LINE: column ---------------------------------------------------------------

ALIBABA_OK = "pod-1,0,0,10,10,0,1,1000,1.0,4000,1024,LS,Running"
PHILLY_OK = "1,vc_a,1,0,10,resnet50,strict"
GQ_OK = "0,10,1,,ann,normal,1,,"


def replace(row: str, column: int, value: str) -> str:
    fields = row.split(",")
    fields[column] = value
    return ",".join(fields)


BAD_ROWS = [
    # (header, good row, column index, bad value, text the error must contain)
    (ALIBABA_HEADER, ALIBABA_OK, 1, "-5", "submit_time: '-5': expected a number of seconds, 0"),
    (ALIBABA_HEADER, ALIBABA_OK, 1, "soon", "submit_time: 'soon': expected a number"),
    (ALIBABA_HEADER, ALIBABA_OK, 1, "", "submit_time: empty"),
    (ALIBABA_HEADER, ALIBABA_OK, 4, "-10", "duration_s: '-10'"),
    (ALIBABA_HEADER, ALIBABA_OK, 4, "nan", "duration_s: 'nan'"),
    (ALIBABA_HEADER, ALIBABA_OK, 4, "inf", "duration_s: 'inf'"),
    (ALIBABA_HEADER, ALIBABA_OK, 6, "1.5", "num_gpu: '1.5': expected a whole number"),
    (ALIBABA_HEADER, ALIBABA_OK, 6, "-1", "num_gpu: '-1': expected a whole number, 0 or more"),
    (ALIBABA_HEADER, ALIBABA_OK, 7, "0", "gpu_milli: '0': expected 1 to 1000"),
    (ALIBABA_HEADER, ALIBABA_OK, 7, "1500", "gpu_milli: '1500': expected 1 to 1000"),
    (ALIBABA_HEADER, ALIBABA_OK, 9, "lots", "cpu_milli: 'lots'"),
    (ALIBABA_HEADER, ALIBABA_OK, 10, "-1", "memory_mib: '-1'"),
    (ALIBABA_HEADER, ALIBABA_OK, 11, "Gold", "qos: 'Gold': expected one of LS, Guaranteed"),
    (ALIBABA_HEADER, ALIBABA_OK, 0, "", "job_id: empty"),
    (PHILLY_HEADER, PHILLY_OK, 1, "", "user: empty"),
    (PHILLY_HEADER, PHILLY_OK, 2, "two", "num_gpu: 'two'"),
    (PHILLY_HEADER, PHILLY_OK, 3, "-1", "submit_time: '-1'"),
    (PHILLY_HEADER, PHILLY_OK, 4, "1h", "duration_s: '1h': expected a number of seconds"),
    (PHILLY_HEADER, PHILLY_OK, 6, "urgent", "job_type: 'urgent': expected one of strict, best"),
    (GQ_HEADER, GQ_OK, 0, "-1", "submit_time: '-1'"),
    (GQ_HEADER, GQ_OK, 1, "ten", "duration: 'ten'"),
    (GQ_HEADER, GQ_OK, 2, "-2", "gpus: '-2'"),
    (GQ_HEADER, GQ_OK, 3, "20X", "mem: '20X': expected a size like 20G"),
    (GQ_HEADER, GQ_OK, 3, "0G", "mem: '0G': a size must be positive"),
    (GQ_HEADER, replace(GQ_OK, 2, "0"), 3, "10G", "mem: GPU memory per GPU needs gpus 1 or more"),
    (GQ_HEADER, GQ_OK, 4, "", "user: empty"),
    (GQ_HEADER, GQ_OK, 5, "urgent", "priority: 'urgent': expected high, normal or low"),
    (GQ_HEADER, GQ_OK, 6, "0", "cpus: '0': expected a whole number, 1 or more"),
    (GQ_HEADER, GQ_OK, 7, "90", "time_limit: '90': give a unit"),
    (GQ_HEADER, GQ_OK, 7, "soon", "time_limit: 'soon': expected a duration like 90m"),
    (GQ_HEADER, GQ_OK, 7, "0s", "time_limit: '0s': a duration must be positive"),
]


@pytest.mark.parametrize("header,good,column,value,expected", BAD_ROWS)
def test_a_bad_row_names_the_file_line_and_column(tmp_path, header, good, column, value,
                                                  expected):
    # A good row and a blank line first, so the bad one is on line 4.
    other = good.replace("pod-1", "pod-2").replace("1,vc_a", "2,vc_a", 1)
    path = write(tmp_path, f"{header}\n{good}\n\n{replace(other, column, value)}\n")
    with pytest.raises(TraceError) as err:
        read_trace(path)
    assert str(err.value).startswith(f"{path}:4: ")
    assert expected in str(err.value)
    assert err.value.line == 4


def test_the_good_rows_of_the_bad_row_table_are_good(tmp_path):
    for header, good, *_ in BAD_ROWS:
        assert len(read_trace(write(tmp_path, f"{header}\n{good}\n")).jobs) == 1


@pytest.mark.parametrize("row,found", [("2,vc_a,1,0,10,resnet50", 6),
                                       ("2,vc_a,1,0,10,resnet50,best,extra", 8)])
def test_a_row_with_the_wrong_number_of_fields_is_an_error(tmp_path, row, found):
    path = write(tmp_path, f"{PHILLY_HEADER}\n{PHILLY_OK}\n{row}\n")
    with pytest.raises(TraceError, match=rf"^{path}:3: expected 7 fields as in the header, "
                                         rf"found {found}$"):
        read_trace(path)


def test_a_repeated_job_id_is_an_error_naming_the_first_line(tmp_path):
    path = write(tmp_path, f"{PHILLY_HEADER}\n{PHILLY_OK}\n2,vc,1,0,1,m,best\n{PHILLY_OK}\n")
    with pytest.raises(TraceError, match=rf"^{path}:4: job_id: '1' is already used on line 2$"):
        read_trace(path)


def test_a_skipped_row_is_still_checked(tmp_path):
    path = write(tmp_path, f"{ALIBABA_HEADER}\npod-p,150,,,,,1,1000,1.0,4000,8192,XX,Pending\n")
    with pytest.raises(TraceError, match=r":2: qos: 'XX'"):
        read_trace(path)


def test_whole_numbers_written_as_floats_are_accepted(tmp_path):
    job = read_trace(write(tmp_path, f"{PHILLY_HEADER}\n1,vc,4.0,0,10,m,best\n")).jobs[0]
    assert job.gpus == 4 and isinstance(job.gpus, int)


# ---- properties ------------------------------------------------------------------------------

gq_rows = st.lists(
    st.fixed_dictionaries({
        "submit_time": st.integers(0, 10**6),
        "duration": st.one_of(st.none(), st.integers(0, 10**5)),
        "gpus": st.integers(0, 8),
        "mem_gib": st.integers(1, 80),
        "user": st.text("abcxyz_", min_size=1, max_size=6),
        "priority": st.sampled_from(["high", "normal", "low", "HIGH", ""]),
        "cpus": st.integers(1, 64),
        "limit_min": st.one_of(st.none(), st.integers(1, 10**4)),
        "name": st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
                        max_size=8),
    }),
    max_size=30,
)


@settings(max_examples=examples(60), deadline=None)
@given(gq_rows)
def test_gq_format_round_trips_every_field_and_sorts(tmp_path_factory, rows):
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(GQ_HEADER.split(","))
    for r in rows:
        mem = f"{r['mem_gib']}G" if r["gpus"] else ""
        limit = "" if r["limit_min"] is None else f"{r['limit_min']}m"
        w.writerow([r["submit_time"], "" if r["duration"] is None else r["duration"], r["gpus"],
                    mem, r["user"], r["priority"], r["cpus"], limit, r["name"]])
    path = tmp_path_factory.mktemp("prop") / "t.csv"
    path.write_text(out.getvalue(), encoding="utf-8")
    trace = read_trace(path)

    ran = [r for r in rows if r["duration"] is not None]
    assert trace.rows == len(rows)
    assert sum(trace.skipped.values()) == len(rows) - len(ran)
    keys = [(j.submit_time, j.job_id) for j in trace.jobs]
    assert keys == sorted(keys)
    got = Counter((j.submit_time, j.duration, j.gpus, j.mem, j.user, j.tier, j.cpus,
                   j.time_limit, j.name) for j in trace.jobs)
    want = Counter((r["submit_time"], r["duration"], r["gpus"],
                    r["mem_gib"] * GIB if r["gpus"] else None, r["user"],
                    Tier(r["priority"].lower() or "normal"), r["cpus"],
                    None if r["limit_min"] is None else r["limit_min"] * 60.0, r["name"].strip())
                   for r in ran)
    assert got == want


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(0, 20), st.sampled_from(["submit_time", "duration", "gpus", "cpus"]),
       st.sampled_from(["-1", "x", "1e", "--3", "nan"]))
def test_any_bad_number_is_reported_on_its_own_line(tmp_path_factory, before, column, value):
    rows = [GQ_OK] * before + [replace(GQ_OK, GQ_HEADER.split(",").index(column), value)]
    path = tmp_path_factory.mktemp("bad") / "t.csv"
    path.write_text("\n".join([GQ_HEADER, *rows]) + "\n")
    with pytest.raises(TraceError) as err:
        read_trace(path)
    assert err.value.line == before + 2
    assert err.value.reason.startswith(f"{column}: {value!r}")


# ---- the real traces in shared/traces ----------------------------------------------------------

def real_trace(name: str) -> Trace:
    path = TRACES / name
    if not path.exists():
        pytest.skip(f"{path} is absent: the shared traces are not checked out next to this repo")
    return read_trace(path)


def test_the_alibaba_openb_trace_reads_in_full():
    trace = real_trace("alibaba-openb-2023-a.csv")
    assert trace.format == "alibaba"
    assert trace.rows == 3804
    assert trace.skipped == {SKIP_NEVER_RAN: 319}  # the rows that end the window Pending
    assert len(trace.jobs) == 3485 == len({j.job_id for j in trace.jobs})
    keys = [(j.submit_time, j.job_id) for j in trace.jobs]
    assert keys == sorted(keys)
    assert Counter(j.tier for j in trace.jobs) == {Tier.HIGH: 1740, Tier.LOW: 1696,
                                                    Tier.NORMAL: 49}
    shared = [j for j in trace.jobs if j.gpu_fraction is not None]
    assert len(shared) == 1213 and all(j.gpus == 1 and 0 < j.gpu_fraction < 1 for j in shared)
    assert Counter(j.gpus for j in trace.jobs)[0] == 554  # of 577 CPU-only rows
    assert {j.user for j in trace.jobs} == {"alibaba"}


def test_the_philly_trace_reads_in_full():
    trace = real_trace("philly-mix1-a.csv")
    assert trace.format == "philly"
    assert trace.rows == len(trace.jobs) == 15470 and trace.skipped == {}
    keys = [(j.submit_time, j.job_id) for j in trace.jobs]
    assert keys == sorted(keys)
    assert Counter(j.tier for j in trace.jobs) == {Tier.HIGH: 10854, Tier.LOW: 4616}
    assert len({j.user for j in trace.jobs}) == 11
    assert max(j.gpus for j in trace.jobs) == 16
    assert all(j.cpus == max(1, 4 * j.gpus) for j in trace.jobs)


def test_the_example_in_docs_reads_as_documented(tmp_path):
    doc = (ROOT / "docs" / "traces.md").read_text()
    section = doc.split("## gq's own format", 1)[1]
    example = section.split("```\n", 2)[1]
    trace = read_trace(write(tmp_path, example))
    assert trace.format == "gq" and trace.skipped == {SKIP_NEVER_RAN: 1}
    assert [(j.name, j.gpus, j.mem, j.tier) for j in trace.jobs] == [
        ("train-llm", 2, 20 * GIB, Tier.HIGH), ("preprocess", 0, None, Tier.NORMAL)]


def test_a_field_too_large_for_csv_is_a_trace_error(tmp_path):
    path = write(tmp_path, f"{PHILLY_HEADER}\n{PHILLY_OK}\n2,vc,1,0,10,{'m' * 200_000},best\n")
    with pytest.raises(TraceError, match=rf"^{path}:3: not valid CSV: field larger than"):
        read_trace(path)

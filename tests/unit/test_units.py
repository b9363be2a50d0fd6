"""Sizes and durations: what users type, and what we print back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gq.units import format_duration, format_size, iso, parse_duration, parse_iso, parse_size


@pytest.mark.parametrize("text,value", [
    ("20G", 20 << 30), ("20g", 20 << 30), ("512M", 512 << 20), ("1.5T", int(1.5 * (1 << 40))),
    ("20GB", 20 << 30), ("20GiB", 20 << 30), ("1024", 1024), ("4K", 4096),
])
def test_parse_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["12XB", "0", "-1G", "", "G", "1.2.3G", "20 G B", "0.0G"])
def test_parse_size_refuses(text):
    with pytest.raises(ValueError):
        parse_size(text)


@pytest.mark.parametrize("text,seconds", [
    ("90m", 5400), ("2h", 7200), ("1d12h", 129600), ("45s", 45), ("30", 1800),
    ("1:30:00", 5400), ("2:00", 7200 / 60), ("1h30m", 5400), ("0.5h", 1800),
])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["5x", "", "h", "1h-2m", "0m", "m30", "1d 2h"])
def test_parse_duration_refuses(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@given(st.integers(1, 1 << 50))
def test_size_round_trip_is_close(n):
    assert abs(parse_size(format_size(n)) - n) <= n * 0.05 + 1


@given(st.integers(1, 10**7))
def test_duration_format_never_fails(s):
    assert format_duration(s)


def test_iso_round_trip():
    assert iso(0) == "1970-01-01T00:00:00Z"
    assert parse_iso(iso(1_800_000_000)) == 1_800_000_000
    assert iso(None) is None and parse_iso(None) is None


def test_a_memory_size_without_a_unit_is_refused_with_the_nearest_reading():
    from gq.units import parse_mem

    assert parse_mem("20G") == 20 << 30 and parse_mem("20GB") == 20 << 30
    for text, meant in (("20", "20G"), ("1.5", "1.5G"), ("20000", "20000M"),
                        ("32212254720", "30G")):
        with pytest.raises(ValueError, match=f"did you mean {meant}\\?"):
            parse_mem(text)
    with pytest.raises(ValueError, match="positive"):
        parse_mem("0")

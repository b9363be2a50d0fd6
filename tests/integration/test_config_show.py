"""`gq config show` and `gq config check`: the effective settings, where each came from."""

from __future__ import annotations

import json

from gq.config import load_config
from gq.config.settings import _KNOWN
from gq.config.lines import setting_lines
from gq.config.show import effective


def test_config_show_prints_each_setting_with_its_source(host):
    path = host.home / "config.toml"
    rows = json.loads(host.gq("config", "show", "--json").stdout)
    assert rows["file"] == str(path) and rows["read"] is True
    by_key = {(r["section"], r["key"]): (r["value"], r["source"]) for r in rows["settings"]}
    assert by_key["host", "cpus"] == (16, f"{path}:2")
    assert by_key["daemon", "kill_wait"] == ("2s", f"{path}:5")
    assert by_key["daemon", "tick"] == ("0.2s", f"{path}:6")
    assert by_key["access", "admins"] == ("gq-admin", "default")
    assert by_key["host", "ram"][1] == "this machine"
    text = host.gq("config", "show").stdout
    assert text.splitlines()[1] == f"# its file: {path} (read)"
    assert "\n[daemon]\n" in text
    assert any(line.startswith('tick = "0.2s"') and line.endswith(f"# {path}:6")
               for line in text.splitlines())


def test_every_setting_is_shown(tmp_path):
    rows = effective(load_config(tmp_path / "none.toml"))
    assert {(r["section"], r["key"].split(".")[0]) for r in rows} == {
        (s, k) for s, keys in _KNOWN.items() for k in keys if k != "users"}
    assert not [r for r in rows if r["source"].startswith("not shown")]


def test_nested_settings_are_shown_a_row_each_with_their_lines(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[scheduler]\ndefault_time = { high = "4h" }\n\n[limits]\n'
                    'max_running_gpus = 2\n\n[limits.users.ann]\nhigh_share = 0.5\n'
                    '\n[offenders.low]\nidle = "cancel after 1h"\n')
    rows = {(r["section"], r["key"]): (r["value"], r["source"])
            for r in effective(load_config(path))}
    assert rows["scheduler", "default_time.high"] == ("4h", f"{path}:2")
    assert rows["scheduler", "default_time"] == ("1d", "default")
    assert rows["limits", "users.ann.high_share"] == (0.5, f"{path}:8")
    assert rows["limits", "users.ann.max_running_gpus"] == (2, "as [limits]")
    assert setting_lines(path.read_text())["limits.users.ann"] == 7
    assert rows["offenders", "low.idle"] == ("cancel after 1h00m", f"{path}:11")
    assert rows["offenders", "idle"] == ("report", "default")


def test_config_check_says_good_or_names_the_line(host, tmp_path):
    assert host.gq("config", "check").stdout == f"{host.home / 'config.toml'}: good\n"
    bad = tmp_path / "bad.toml"
    bad.write_text('[daemon]\ntick = "1s"\nidle_timeout = "soon"\n')
    proc = host.gq("config", "check", str(bad), check=False)
    assert proc.returncode == 2
    assert proc.stderr == (f"gq: {bad} line 3: [daemon] idle_timeout = 'soon': expected a "
                           "duration like 90m, 2h, 1d12h or 45s\n")
    missing = host.gq("config", "check", str(tmp_path / "none.toml"), check=False)
    assert (missing.returncode, missing.stderr) == (2, f"gq: {tmp_path / 'none.toml'}: no such "
                                                       "file\n")


def test_pools_and_accounts_are_shown(tmp_path):
    """Issue 26 item 5: they were left out, though every setting is said to be shown."""
    from gq.cli.config_cmd import print_settings

    path = tmp_path / "config.toml"
    path.write_text('[pools.inter]\ncards = [0]\nmax_time = "1h"\ninteractive = true\n\n'
                    '[accounts.vision]\nusers = ["ann", "bob"]\nshare = 2\n')
    rows = {(r["section"], r["key"]): (r["value"], r["source"])
            for r in effective(load_config(path))}
    assert rows["pools.inter", "cards"] == ([0], f"{path}:2")
    assert rows["pools.inter", "max_time"] == ("1h", f"{path}:3")
    assert rows["pools.inter", "past_limit"] == ("stop", "default")
    assert rows["accounts.vision", "users"] == (["ann", "bob"], f"{path}:7")
    assert rows["accounts.vision", "share"] == (2.0, f"{path}:8")
    assert rows["accounts.vision", "max_share"] == (None, "default")
    report = {"read": True, "socket": "s", "file": str(path),
              "settings": effective(load_config(path))}
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_settings(report)
    assert "\n[pools.inter]\ncards = [0]" in out.getvalue()
    assert "\n[accounts.vision]\nusers = [\"ann\", \"bob\"]" in out.getvalue()

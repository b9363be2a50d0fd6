"""Shell completion for real: the generated scripts in bash, zsh and fish, against a live daemon."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT, SUPPORT

SCRIPTS = {shell: ROOT / "completions" / f"gq.{shell}" for shell in ("bash", "zsh", "fish")}
ZSH_CAPTURE = SUPPORT / "completion_capture.zsh"


def _load_generator():
    spec = importlib.util.spec_from_file_location("gen_completions",
                                                  ROOT / "scripts" / "gen_completions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_completion_scripts_are_up_to_date():
    stale = _load_generator().stale()
    assert stale == [], f"stale: {stale}; run python scripts/gen_completions.py"


def test_every_argument_of_every_command_has_a_completion_kind():
    from gq.cli.completion import command_specs

    specs = {" ".join(s.path): s for s in command_specs()}
    assert specs["cancel"].argument == "jobs:cancel" and specs["submit"].argument == "command"
    assert specs["sim"].argument == "files" and specs["daemon"].subcommands
    kinds = {o.flags[0]: o.kind for o in specs["submit"].options}
    assert kinds["--priority"] == "words:high normal low" and kinds["--after"] == "jobs:after"
    assert kinds["--hold"] is None and kinds["--mem"] == "none"


def test_options_still_to_come_get_their_values_by_name(queue, tmp_path):
    """--signal and --host (preemption, peers) complete as soon as a command has them."""
    from gq.cli import completion_render
    from gq.cli.completion import CommandSpec, OptionSpec, _option_kinds

    kinds = _option_kinds()
    options = (OptionSpec(("--signal",), "checkpoint signal", kinds["--signal"]),
               OptionSpec(("--host",), "run on a peer", kinds["--host"]))
    specs = [CommandSpec((), "", ("run",), (), None),
             CommandSpec(("run",), "", (), options, "command")]
    script = tmp_path / "fake.bash"
    script.write_text(completion_render.bash(specs))
    table = [("gq run --signal U", {"USR1", "USR2"}, {"TERM"}),
             ("gq run --host a", {"any"}, set())]
    check(run_bash(script, [line for line, _, _ in table], queue["env"]), table)


# ---- a queue to complete against --------------------------------------------------------


@pytest.fixture
def queue(host, tmp_path):
    """A daemon with a held job, a held 3-element array, a completed job; a `gq` on PATH."""
    held = host.submit("--hold", "-n", "train", "--", "true")
    array = host.submit("--hold", "-n", "sweep", "--array", "0-2", "--", "true")
    done = host.submit("-n", "done", "--", "true")
    host.wait_ended(done)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gq").write_text(f'#!/bin/sh\nexec {sys.executable} -m gq "$@"\n')
    (bin_dir / "gq").chmod(0o755)
    (tmp_path / "home").mkdir()
    env = {**host.env, "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
           "HOME": str(tmp_path / "home"), "TERM": "dumb"}
    for key in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "BASH_COMPLETION_USER_DIR"):
        env.pop(key, None)
    return {"held": held, "array": array, "done": done, "env": env, "dir": tmp_path}


def cases(q) -> list[tuple[str, set[str], set[str]]]:
    """(line typed before Tab, what must be offered, what must not)."""
    held, array, done = str(q["held"]), str(q["array"]), str(q["done"])
    return [
        ("gq ", {"submit", "cancel", "ls", "daemon", "completion"}, {"--help"}),
        ("gq ca", {"cancel"}, {"submit"}),
        ("gq cancel ", {held, array}, {done, f"{array}_0"}),
        (f"gq cancel {array}_", {f"{array}_0", f"{array}_1", f"{array}_2"}, {held}),
        ("gq release ", {held, array}, {done}),
        ("gq logs ", {held, array, done}, set()),
        ("gq submit --priority ", {"high", "normal", "low"}, set()),
        ("gq submit -g 2 --after ", {held, array, done}, set()),
        ("gq submit -n cancel --h", {"--hold", "--help"}, {held}),
        ("gq submit --pri", {"--priority"}, {"--gpus"}),
        ("gq ls --state ru", {"running"}, {"pending"}),
        ("gq daemon st", {"start", "stop", "status"}, {"run"}),
        ("gq sim --policy ", {"gq", "fifo", "greedy", "all"}, set()),
        ("gq completion install ", {"bash", "zsh", "fish"}, set()),
        ("gq submit -g 1 -- ech", {"echo"}, {"--gpus"}),
        ("gq submit ech", {"echo"}, set()),
    ]


# ---- bash ---------------------------------------------------------------------------------


def bash_words(line: str) -> list[str]:
    """The words bash hands a completion function: `=` after an option is a word of its own."""
    words = []
    for word in line.split(" "):
        if word.startswith("--") and "=" in word:
            opt, _, value = word.partition("=")
            words += [opt, "=", value] if value else [opt, "="]
        else:
            words.append(word)
    return words


def run_bash(script: Path, lines: list[str], env: dict[str, str]) -> list[set[str]]:
    body = [f"source {script}", "complete -p gq"]
    for line in lines:
        words = " ".join("'" + w.replace("'", "'\\''") + "'" for w in bash_words(line))
        body += [f"COMP_WORDS=({words}); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))",
                 f"COMP_LINE={line!r}; COMP_POINT=${{#COMP_LINE}}; COMPREPLY=(); _gq",
                 "printf '%s\\n' \"${COMPREPLY[@]}\"; echo --"]
    out = subprocess.run(["bash", "--norc", "--noprofile", "-c", "\n".join(body)], env=env,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    first, _, rest = out.partition("\n")
    assert first == "complete -F _gq gq"
    return [set(filter(None, block.split("\n"))) for block in rest.split("--\n")[:-1]]


def check(results: list[set[str]], table) -> None:
    assert len(results) == len(table)
    for offered, (line, must, must_not) in zip(results, table):
        assert must <= offered, f"{line!r} offered {sorted(offered)}, lacking {must - offered}"
        assert not (must_not & offered), f"{line!r} offered {sorted(must_not & offered)}"


def test_bash_completes_commands_options_values_and_live_job_ids(queue):
    table = cases(queue) + [
        ("gq submit --priority=h", {"high"}, {"normal"}),
        ("gq submit --gpus=2 --af", {"--after", "--afterok", "--afternotok", "--afterstart"},
         set()),
        ("gq submit --cwd /tm", {"/tmp"}, set()),
    ]
    check(run_bash(SCRIPTS["bash"], [line for line, _, _ in table], queue["env"]), table)


# ---- zsh ----------------------------------------------------------------------------------


def matches(out: str) -> list[dict[str, str]]:
    """Blocks of `MATCH<tab>DESCRIPTION` lines, each ended by a line `--`, as dicts."""
    return [dict((line.split("\t", 1) + [""])[:2] for line in block.splitlines() if line)
            for block in out.split("--\n")[:-1]]


def run_zsh(before: str, after: str, lines: list[str], env) -> list[dict[str, str]]:
    out = subprocess.run(["zsh", "-f", str(ZSH_CAPTURE), before, after, *lines], env=env,
                         capture_output=True, text=True, timeout=90, check=True).stdout
    return matches(out)


needs_zsh = pytest.mark.skipif(shutil.which("zsh") is None,
                               reason="zsh is not installed (apt-get install zsh)")
needs_fish = pytest.mark.skipif(shutil.which("fish") is None,
                                reason="fish is not installed (apt-get install fish)")


@needs_zsh
def test_zsh_completes_them_too_with_names_and_states_as_descriptions(queue):
    table = cases(queue) + [("gq submit --priority=h", {"high"}, {"normal"})]
    results = run_zsh("", f"source {SCRIPTS['zsh']}", [line for line, _, _ in table],
                      queue["env"])
    check([set(r) for r in results], table)
    jobs = results[2]
    assert "train, held" in jobs[str(queue["held"])]
    assert "sweep, array of 3: 3 held" in jobs[str(queue["array"])]
    assert "Queue a job" in results[0]["submit"]


# ---- fish ---------------------------------------------------------------------------------


def run_fish(lines: list[str], env, source: Path | None) -> list[dict[str, str]]:
    """Without `source`, fish reads its configuration and finds completions by itself."""
    body = [f"source {source}"] if source else []
    for line in lines:
        body += [f"complete -C {json.dumps(line)}", "printf '%s\\n' --"]
    flags = ["--no-config"] if source else []
    out = subprocess.run(["fish", *flags, "-c", "\n".join(body)], env=env,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return matches(out)


@needs_fish
def test_fish_completes_them_too_with_names_and_states_as_descriptions(queue):
    table = cases(queue)
    results = run_fish([line for line, _, _ in table], queue["env"], SCRIPTS["fish"])
    check([set(r) for r in results], table)
    assert results[2][str(queue["held"])] == "train, held"
    assert results[2][str(queue["array"])] == "sweep, array of 3: 3 held"


# ---- the light path ----------------------------------------------------------------------


def test_completing_job_ids_imports_nothing_heavy(queue):
    code = ("import sys, json\nfrom gq.cli import entry\ntry:\n"
            "    entry.main(['__complete', 'jobs', 'cancel', ''])\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted(sys.modules)), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], env=queue["env"], capture_output=True,
                          text=True, check=True)
    assert proc.stdout.splitlines() == [f"{queue['held']}\ttrain, held",
                                        f"{queue['array']}\tsweep, array of 3: 3 held"]
    loaded = set(json.loads(proc.stderr))
    heavy = {"typer", "click", "rich", "textual", "sqlite3", "sqlite_utils", "psutil",
             "subprocess", "asyncio", "dataclasses", "gq.cli.app", "gq.daemon"}
    assert loaded & heavy == set()


def test_completion_never_starts_a_daemon_and_says_nothing_without_one(tmp_path):
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GQ_")}
    env.update(GQ_HOME=str(home), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "gq", "__complete", "jobs", "cancel", ""],
                          env=env, capture_output=True, text=True, timeout=30)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert not home.exists()
    hosts = subprocess.run([sys.executable, "-m", "gq", "__complete", "hosts", "a"], env=env,
                           capture_output=True, text=True, timeout=30).stdout
    assert hosts == "any\twherever it starts first\n"


# ---- installing ---------------------------------------------------------------------------


def test_gq_completion_rc_prints_the_lines_a_new_shell_still_needs(queue):
    env = queue["env"]
    subprocess.run(["gq", "completion", "install"], env=env, capture_output=True, timeout=60,
                   check=True)

    def rc(shell: str) -> list[str]:
        return subprocess.run(["gq", "completion", "rc", shell], env=env, capture_output=True,
                              text=True, timeout=60, check=True).stdout.splitlines()

    zsh = rc("zsh")
    assert zsh == ["fpath=($HOME/.local/share/zsh/site-functions $fpath)",
                   "autoload -U compinit && compinit"]
    loader = any(os.path.exists(p) for p in ("/usr/share/bash-completion/bash_completion",
                                             "/etc/bash_completion"))
    bash = rc("bash")
    assert bash == ([] if loader else
                    ["source $HOME/.local/share/bash-completion/completions/gq"])
    # Without bash-completion, the line alone makes bash complete gq.
    source = "source $HOME/.local/share/bash-completion/completions/gq"
    probe = subprocess.run(["bash", "--norc", "-c", f"{source}; complete -p gq"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0 and "gq" in probe.stdout
    assert rc("fish") == []
    if shutil.which("zsh"):
        found = run_zsh(zsh[0], "", ["gq can"], env)
        assert set(found[0]) == {"cancel"}


def test_gq_completion_install_puts_each_script_where_its_shell_looks(queue):
    env, home = queue["env"], Path(queue["env"]["HOME"])
    proc = subprocess.run(["gq", "completion", "install"], env=env, capture_output=True,
                          text=True, timeout=60, check=True)
    installed = {
        "bash": home / ".local/share/bash-completion/completions/gq",
        "zsh": home / ".local/share/zsh/site-functions/_gq",
        "fish": home / ".config/fish/completions/gq.fish",
    }
    for shell, path in installed.items():
        assert path.read_text() == SCRIPTS[shell].read_text()
        assert f"{shell}: {path}" in proc.stdout
    assert f"fpath=({installed['zsh'].parent} $fpath)" in proc.stdout
    # Each shell finds it there by itself: fish in its directory, zsh through $fpath.
    if shutil.which("fish"):
        found = run_fish(["gq can", "gq cancel "], env, source=None)
        assert set(found[0]) == {"cancel"} and str(queue["held"]) in found[1]
    if shutil.which("zsh"):
        found = run_zsh(f"fpath=({installed['zsh'].parent} $fpath)", "", ["gq can"], env)
        assert set(found[0]) == {"cancel"}
    bad = subprocess.run(["gq", "completion", "install", "tcsh"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr == "gq: tcsh: expected one of bash, zsh, fish\n"
    shown = subprocess.run(["gq", "completion", "script", "fish"], env=env, capture_output=True,
                           text=True, timeout=60, check=True).stdout
    assert shown == SCRIPTS["fish"].read_text()


def test_job_ids_come_in_number_order_and_the_shells_keep_it(queue):
    """39 before 353: the daemon answers in number order, and each shell keeps that order
    rather than sorting the ids as text."""
    env = queue["env"]
    more = [int(subprocess.run(["gq", "submit", "--hold", "--", "true"], env=env, text=True,
                               capture_output=True, timeout=60, check=True).stdout)
            for _ in range(10)]
    assert max(more) >= 10
    offered = subprocess.run(["gq", "__complete", "jobs", "cancel", ""], env=env, text=True,
                             capture_output=True, timeout=60, check=True).stdout
    ids = [int(line.split("\t")[0]) for line in offered.splitlines()]
    assert ids == sorted(ids) and set(more) <= set(ids)
    # bash sorts what it shows unless told not to: the script tells it, for job ids.
    told = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c",
         f"source {SCRIPTS['bash']}; compopt() {{ echo \"compopt $*\"; }}; "
         "COMP_WORDS=(gq cancel ''); COMP_CWORD=2; COMP_LINE='gq cancel '; COMP_POINT=10; "
         "_gq; printf '%s\\n' \"${COMPREPLY[@]}\""],
        env=env, capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    assert told[0] == "compopt -o nosort" and [int(i) for i in told[1:]] == ids
    assert "_describe -V -t jobs" in SCRIPTS["zsh"].read_text()
    assert "-x -k -a '(__gq_ask jobs cancel)'" in SCRIPTS["fish"].read_text()

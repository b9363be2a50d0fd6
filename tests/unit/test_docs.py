"""The docs keep up with the code: the CLI reference, the README's set-up commands, the states."""

from __future__ import annotations

import importlib.util
import re

import pytest

from gq.model import TRANSITIONS, JobState

from tests.support.paths import ROOT

README = ROOT / "README.md"
CLI_DOC = ROOT / "docs" / "cli.md"

TEST_COMMAND = (
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest -q"
)


def _load_generator():
    spec = importlib.util.spec_from_file_location("gen_cli_docs", ROOT / "scripts" / "gen_cli_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_cli_docs = _load_generator()


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(info string, body) of each fenced code block, in order."""
    return [(m[1].strip(), m[2].strip("\n"))
            for m in re.finditer(r"^```([^\n]*)\n(.*?)^```\s*$", text, re.S | re.M)]


def test_cli_reference_is_up_to_date():
    diff = gen_cli_docs.check(CLI_DOC)
    assert diff is None, f"docs/cli.md is stale: run python scripts/gen_cli_docs.py\n{diff}"


def test_the_generator_covers_every_command_and_group():
    names = gen_cli_docs.command_names()
    for expected in ("gq", "gq submit", "gq ls", "gq logs", "gq wait", "gq daemon",
                     "gq daemon stop"):
        assert expected in names
    assert len(names) == len(set(names))


@pytest.mark.parametrize("name", gen_cli_docs.command_names())
def test_every_command_is_documented(name):
    cli_doc, readme = CLI_DOC.read_text(), README.read_text()
    in_cli_doc = re.search(rf"^## {re.escape(name)}$", cli_doc, re.M)
    in_readme = re.search(rf"`{re.escape(name)}[` ]", readme)
    assert in_cli_doc or in_readme, f"`{name}` is in neither docs/cli.md nor README.md"


def test_readme_starts_with_the_two_set_up_commands():
    text = README.read_text()
    assert text.startswith("# gq\n")
    before_first_section = text.split("\n## ", 1)[0]
    blocks = fenced_blocks(before_first_section)
    assert len(blocks) >= 2, "the README must open with two fenced set-up commands"
    (lang1, install), (lang2, tests) = blocks[:2]
    assert lang1 == lang2 == "bash"
    # First: install, then the demo, which needs no GPU (simulated cards) and cleans up.
    assert install.startswith("./install.sh && ")
    assert install.endswith("gq demo --no-tui --seconds 20"), "the first command runs the demo"
    assert "\n" not in install, "the install command must stay one line to copy"
    # Second: the test command, word for word.
    assert tests == TEST_COMMAND
    # Nothing but the title and one paragraph before them.
    title, _, description = before_first_section.split("```", 1)[0].partition("\n")
    assert title == "# gq" and description.strip() and "\n\n" not in description.strip()


def test_ci_runs_the_readme_test_command_verbatim():
    (_, readme_tests) = fenced_blocks(README.read_text())[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "set -euo pipefail" in ci
    commands = [line.strip() for line in ci.splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    # The test command is the last thing CI runs, so pytest's summary ends its output.
    assert commands[-1] == readme_tests


def test_readme_links_resolve():
    for target in re.findall(r"\]\(([^)#]+)\)", README.read_text()):
        if "://" not in target:
            assert (ROOT / target).exists(), f"README links to missing {target}"


ALLOWED = {(old, new) for old, news in TRANSITIONS.items() for new in news}


def drawn_transitions(doc: str) -> set[tuple[JobState, JobState]]:
    """The state changes drawn in the first mermaid diagram of a page of docs/."""
    text = (ROOT / "docs" / doc).read_text()
    diagram = next(body for lang, body in fenced_blocks(text) if lang == "mermaid")
    drawn = set()
    for line in diagram.splitlines():
        m = re.match(r"\s*(\S+)\s*-->\s*(\S+?)\s*(?::|$)", line)
        if m and m[1] != "[*]":
            drawn.add((JobState(m[1]), JobState(m[2])))
    return drawn


def test_states_diagram_matches_the_transition_table():
    text = (ROOT / "docs" / "states.md").read_text()
    drawn, allowed = drawn_transitions("states.md"), ALLOWED
    assert drawn - allowed == set(), "docs/states.md draws transitions the code forbids"
    assert allowed - drawn == set(), "docs/states.md misses transitions the code allows"
    for state in JobState:
        assert f"| `{state}` |" in text, f"docs/states.md does not describe {state}"


def test_the_concepts_diagram_draws_only_transitions_the_code_allows():
    drawn = drawn_transitions("concepts.md")
    assert drawn and drawn - ALLOWED == set()

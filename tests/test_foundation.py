"""The project's contract with a new user: the console script, the workflows, the make targets."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _spyre_ci(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spyre_ci", *args], capture_output=True, text=True, timeout=120
    )


def test_version_matches_package_metadata() -> None:
    from importlib.metadata import version

    result = _spyre_ci("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"spyre-ci, version {version('spyre-ci')}"


def test_help_lists_every_registered_subcommand() -> None:
    from spyre_ci.cli import cli

    result = _spyre_ci("--help")
    assert result.returncode == 0, result.stderr
    for name in cli.commands:
        assert re.search(rf"^\s+{re.escape(name)}\s", result.stdout, re.M), name


def test_unknown_subcommand_fails_with_usage() -> None:
    result = _spyre_ci("no-such-command")
    assert result.returncode == 2
    assert "No such command" in result.stderr


def test_a_bad_option_value_is_one_line_naming_the_option(tmp_path: Path) -> None:
    """As every other error: click's usage text and hint line are left out."""
    result = _spyre_ci("select", "--from", "2.13.0", "--diff", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"Error: Invalid value for '--diff': File '{tmp_path}' is a directory. "
        "(see 'spyre-ci select --help')"
    ]


def test_every_command_shares_selects_exit_codes_and_says_so_in_help() -> None:
    from selection.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_SELECTED
    from spyre_ci import exit_codes

    assert (exit_codes.EXIT_OK, exit_codes.EXIT_FAILED, exit_codes.EXIT_BAD_INPUT) == (
        EXIT_SELECTED,
        EXIT_INTERNAL,
        EXIT_BAD_INPUT,
    )
    top = _spyre_ci("--help").stdout
    assert "Exit codes (every command; docs/cli.md):" in top and "2  bad input" in top
    for command in (("test",), ("relay",), ("ci",), ("manifest", "validate"), ("select",)):
        assert "Exit codes" in _spyre_ci(*command, "--help").stdout, command


def test_relay_and_selection_import_without_torch() -> None:
    # A relay host must not need the 2 GB wheel: importing the CLI, the relay
    # and the selection must not pull torch in.
    code = (
        "import sys, spyre_ci.cli, relay, selection, test_manifests;print('torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize("workflow", sorted((ROOT / ".github" / "workflows").glob("*.yml")))
def test_workflow_passes_actionlint(workflow: Path) -> None:
    result = subprocess.run(
        [str(Path(sys.executable).parent / "actionlint"), "-no-color", str(workflow)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_readme_lists_every_make_target() -> None:
    makefile = (ROOT / "Makefile").read_text()
    targets = re.findall(r"^([a-z0-9-]+):.*## ", makefile, re.M)
    readme = (ROOT / "README.md").read_text()
    assert targets, "no documented make targets"
    missing = [t for t in targets if f"make {t}" not in readme]
    assert not missing, f"README does not mention: {missing}"


def test_ci_script_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme.split("\n## ")[0], "the test command must be at the top"
    assert re.search(r"^make test$", ci, re.M)

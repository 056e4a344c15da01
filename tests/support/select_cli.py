"""`spyre-ci select` invoked in-process, as the selection tests drive it."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from spyre_ci.cli import cli
from tests.support.upstream_repo import UpstreamRepo


def run_select(args: list[str], cache: Path) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of `spyre-ci select --quiet` with its own cache."""
    result = CliRunner().invoke(cli, ["select", "--cache-dir", str(cache), "--quiet", *args])
    return result.exit_code, result.stdout, result.stderr


def range_args(upstream: UpstreamRepo, head: str, manifest: Path, out: Path) -> list[str]:
    """Commit-range mode: the upstream fixture's base to `head`, one manifest, `out`."""
    return mode_args(upstream, ["--from", upstream.base, "--to", head], manifest, out)


def mode_args(upstream: UpstreamRepo, mode: list[str], manifest: Path, out: Path) -> list[str]:
    """The upstream fixture's clone, the `mode` options (range, --pr, --diff), one manifest,
    `out`."""
    return [
        "--pytorch-repo",
        str(upstream.path),
        *mode,
        "--manifest",
        str(manifest),
        "--out",
        str(out),
    ]

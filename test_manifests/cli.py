"""`spyre-ci manifest {validate,schema,lint,explain,merge}` and `spyre-ci test`.

Importing this module never imports torch (`spyre-ci --help` stays fast); `lint` imports it
only for the OpInfo database (skip with --no-opinfo), `test` runs pytest.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from spyre_ci.exit_codes import EXIT_BAD_INPUT, EXIT_FAILED
from test_manifests.loader import ManifestError, load_manifest, load_manifests
from test_manifests.matching import PathRoots, env_root
from test_manifests.model import Manifest

if TYPE_CHECKING:
    from test_manifests.run import Selection

_PATHS = click.argument(
    "paths", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path)
)
_SRC_DIR = click.Path(exists=True, file_okay=False, path_type=Path)


def _roots(pytorch_src: Path | None, device_src: Path | None = None) -> PathRoots:
    torch_root = pytorch_src or env_root("${TORCH_ROOT}")
    device_root = device_src or env_root("${TORCH_DEVICE_ROOT}")
    return PathRoots(
        torch_root=str(Path(torch_root).resolve()) if torch_root else None,
        device_root=str(Path(device_root).resolve()) if device_root else None,
    )


def _fail(exc: ManifestError) -> NoReturn:
    """Bad input (exit 2): one line per problem, each naming file, line and field."""
    for issue in exc.issues:
        click.echo(str(issue), err=True)
    raise SystemExit(EXIT_BAD_INPUT)


def exit_code_of_pytest(code: int) -> int:
    """pytest's exit code as ours: its usage errors (bad arguments after --, a manifest
    that selects zero tests, selected ids that all do not exist) are bad input (2); an
    interrupted run (collection errors, Ctrl-C) or an internal error is a failed run (1);
    the others stay as pytest gives them (0, 1, 5 no tests collected)."""
    from pytest import ExitCode

    if code == ExitCode.USAGE_ERROR:
        return EXIT_BAD_INPUT
    if code in (ExitCode.INTERRUPTED, ExitCode.INTERNAL_ERROR):
        return EXIT_FAILED
    return int(code)


def _load_one(paths: tuple[Path, ...]) -> Manifest:
    from test_manifests.merge import merge_manifests

    try:
        loaded = load_manifests(paths)
        return merge_manifests(loaded) if len(loaded) > 1 else loaded[0]
    except ManifestError as exc:
        _fail(exc)


def schema_document() -> dict[str, object]:
    """The JSON Schema of a manifest (committed as test_manifests/schema.json)."""
    schema = Manifest.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "spyre-ci test manifest (torch-spyre test_suite_config)"
    return schema


@click.group("manifest")
def manifest_group() -> None:
    """Test-reuse manifests (torch-spyre's test_suite_config format)."""


@manifest_group.command("validate")
@_PATHS
def validate_command(paths: tuple[Path, ...]) -> None:
    """Validate manifests; every error names file, line and field.

    Exit codes: 0 every manifest is valid, 2 one is not (one line per problem).
    """
    failed = False
    for path in paths:
        try:
            manifest = load_manifest(path)
        except ManifestError as exc:
            failed = True
            for issue in exc.issues:
                click.echo(str(issue), err=True)
            continue
        tests = sum(len(f.tests) for f in manifest.suite.files)
        click.echo(
            f"ok: {path} ({len(manifest.suite.files)} file(s), {tests} test entr{'y' if tests == 1 else 'ies'})"
        )
    if failed:
        raise SystemExit(EXIT_BAD_INPUT)


@manifest_group.command("schema")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="write here instead of stdout",
)
def schema_command(output: Path | None) -> None:
    """Write the JSON Schema of the manifest format (for editors)."""
    text = json.dumps(schema_document(), indent=2, sort_keys=True) + "\n"
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)


@manifest_group.command("lint")
@_PATHS
@click.option(
    "--pytorch-src",
    type=_SRC_DIR,
    help="PyTorch source tree: check names against the real test files",
)
@click.option(
    "--no-opinfo", is_flag=True, help="skip the OpInfo/ModuleInfo checks (they import torch)"
)
def lint_command(paths: tuple[Path, ...], pytorch_src: Path | None, no_opinfo: bool) -> None:
    """Names that match nothing, variant names, duplicates, unknown ops/dtypes, missing reasons.

    Exit codes: 0 no error finding (warnings allowed), 1 error findings, 2 a manifest
    cannot be loaded.
    """
    from test_manifests.lint import catalog_from_torch, lint

    catalog = None if no_opinfo else catalog_from_torch()
    roots = _roots(pytorch_src) if pytorch_src else None
    errors = 0
    for path in paths:
        try:
            manifest = load_manifest(path)
        except ManifestError as exc:
            _fail(exc)
        findings = lint(manifest, roots, catalog)
        for finding in findings:
            click.echo(str(finding), err=True)
        errors += sum(f.severity == "error" for f in findings)
        if not findings:
            click.echo(f"clean: {path}")
    if errors:
        click.echo(f"{errors} error(s)", err=True)
        raise SystemExit(EXIT_FAILED)


@manifest_group.command("explain")
@click.argument("test_id")
@click.option(
    "--manifest",
    "manifests",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="manifest(s) to apply (default: the shipped ones)",
)
@click.option("--pytorch-src", type=_SRC_DIR, help="PyTorch source tree (finds the template name)")
def explain_command(test_id: str, manifests: tuple[Path, ...], pytorch_src: Path | None) -> None:
    """Resolved mode, dtypes, tolerance and marks of TEST_ID, and the rule behind each."""
    from test_manifests.explain import BadTestId, explain, render
    from test_manifests.run import shipped_manifests

    manifest = _load_one(manifests or tuple(shipped_manifests()))
    try:
        instance, resolution = explain(manifest, test_id, _roots(pytorch_src))
    except BadTestId as exc:
        raise click.BadParameter(str(exc), param_hint="TEST_ID") from exc
    click.echo(render(instance, resolution))


@manifest_group.command("merge")
@_PATHS
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="write here instead of stdout",
)
def merge_command(paths: tuple[Path, ...], output: Path | None) -> None:
    """Merge manifests into one (same path combined, global lists unioned, conflicts are errors)."""
    from test_manifests.merge import merged_yaml

    text = merged_yaml(_load_one(paths))
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)


@click.command("test", context_settings={"ignore_unknown_options": True})
@click.option(
    "--manifest",
    "manifests",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="manifest(s) to apply (default: the shipped ones)",
)
@click.option(
    "--pytorch-src",
    type=_SRC_DIR,
    help="PyTorch source tree (default: $SPYRE_CI_PYTORCH_SRC, then $PYTORCH_ROOT)",
)
@click.option("--device-src", type=_SRC_DIR, help="the backend's tree, for ${TORCH_DEVICE_ROOT}")
@click.option("--selection", type=_SRC_DIR, help="output directory of `spyre-ci select`")
@click.option("--shard", type=int, help="run this shard of the selection")
@click.option(
    "--label", "labels", multiple=True, help="run only tests with this label (repeatable)"
)
@click.option(
    "--upstream-conftest",
    is_flag=True,
    help="also load PyTorch's test/conftest.py (off by default)",
)
@click.argument("pytest_args", nargs=-1, type=click.UNPROCESSED)
def test_command(
    manifests: tuple[Path, ...],
    pytorch_src: Path | None,
    device_src: Path | None,
    selection: Path | None,
    shard: int | None,
    labels: tuple[str, ...],
    upstream_conftest: bool,
    pytest_args: tuple[str, ...],
) -> None:
    """Run upstream PyTorch tests against spyre under a manifest: [-- pytest args].

    Needs a PyTorch source tree (--pytorch-src DIR, or SPYRE_CI_PYTORCH_SRC / PYTORCH_ROOT)
    of the version the tests are meant for: the manifests name files of its test/ directory.

    \b
    Exit codes:
      0  every test that ran passed (an empty shard runs nothing: 0 too)
      1  tests failed, or pytest stopped (collection errors, interrupted, internal error)
      2  bad input: an invalid manifest, no PyTorch tree, a bad --selection/--shard, or one
         of pytest's usage errors (a manifest that selects zero tests, bad pytest args)
      5  pytest collected no tests (e.g. a -k that matches none)
    """
    import pytest

    from test_manifests.run import BadShard, manifest_paths, read_selection, shipped_manifests
    from test_manifests.run import pytest_args as build_args
    from test_manifests.torch_test_devices import subprocess_env

    if shard is not None and selection is None:
        raise click.UsageError("--shard N needs --selection DIR (a `spyre-ci select` output)")
    roots = _roots(pytorch_src, device_src)
    try:
        chosen = read_selection(selection, shard) if selection else None
    except BadShard as exc:
        raise click.UsageError(str(exc)) from exc
    except ManifestError as exc:
        _fail(exc)
    if chosen is not None and not chosen.ids:
        what = f"shard {shard} of selection {selection}" if shard else f"selection {selection}"
        click.echo(f"{what} is empty: nothing to run", err=True)
        sys.exit(0)
    chosen_manifests = list(manifests) or _selection_manifests(chosen) or shipped_manifests()
    if chosen is not None:
        _warn_other_tree(roots.torch_root, chosen.head_shas, pytorch_src)
    try:
        args = build_args(
            chosen_manifests,
            roots,
            chosen,
            list(labels),
            list(pytest_args),
            upstream_conftest,
        )
    except ManifestError as exc:
        _fail(exc)
    # Subprocesses that upstream tests spawn apply the manifest too (TORCH_TEST_DEVICES).
    # This process applies it through the pytest plugin: common_device_type is imported
    # first, so that it does not run the TORCH_TEST_DEVICES module here. The backend is
    # registered before it, as torch-spyre's autoload does: common_device_type reads the
    # PrivateUse1 name into NATIVE_DEVICES when imported, so `onlyNativeDeviceTypes` tests
    # (most of TestCommon, TestViewOps) would otherwise skip on spyre.
    import torch_spyre_ref  # noqa: F401

    # isort: split
    import torch.testing._internal.common_device_type  # noqa: F401

    os.environ.update(
        subprocess_env(
            manifest_paths(chosen_manifests, chosen), roots.torch_root, roots.device_root
        )
    )
    click.echo("pytest " + " ".join(args), err=True)
    sys.exit(exit_code_of_pytest(pytest.main(args)))


def _selection_manifests(chosen: Selection | None) -> list[Path]:
    """The manifests `spyre-ci select` recorded (selection.json `manifests`); one that no
    longer exists is a usage error naming it."""
    recorded = list(chosen.manifests) if chosen is not None else []
    for path in recorded:
        if not path.is_file():
            raise click.UsageError(
                f"manifest {path}, recorded in the selection's selection.json, no longer exists: "
                "pass --manifest FILE"
            )
    return recorded


def _warn_other_tree(torch_root: str | None, head_shas: list[str], given: Path | None) -> None:
    """One line on stderr when the PyTorch tree (`given` --pytorch-src, else the one found
    through the environment) is a git checkout at another commit than the one the
    selection analysed (nothing when it is no git tree or no sha was recorded)."""
    if torch_root is None or not head_shas:
        return
    pytorch_src = Path(torch_root)
    shown = f"--pytorch-src {given}" if given is not None else f"the PyTorch tree {torch_root}"
    import subprocess

    try:
        done = subprocess.run(
            ["git", "-C", str(pytorch_src), "rev-parse", "--show-toplevel", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2:
        return
    if Path(lines[0]).resolve() != pytorch_src.resolve():
        return  # a plain directory inside some other repository: not a checkout of PyTorch
    head = lines[1]
    if head not in head_shas:
        click.echo(
            f"warning: {shown} is at {head[:12]}, the selection analysed "
            f"{head_shas[0][:12]}: the tests run may not be the tree that was analysed",
            err=True,
        )


def register(group: click.Group) -> None:
    group.add_command(manifest_group)
    group.add_command(test_command)

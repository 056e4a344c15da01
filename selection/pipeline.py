"""Turn what the user asked for into a SelectionRequest, and run the stages over it.

Modes: a release upgrade (`--from 2.13 --to 2.14`: wheels mirrored into the cache), a commit
range or a pull request in a PyTorch clone, or a diff file applied onto a base.
"""

from __future__ import annotations

import gc
import importlib.metadata
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import git

from selection.agents import TriageAgent
from selection.backend import BackendScope
from selection.device import load_device_facts
from selection.enumerate import DeviceProfile
from selection.errors import BadInput
from selection.hooks import Stage, StageRegistry, UnknownStage
from selection.model import Revision
from selection.observed import ObservedMap
from selection.sources import repo as repo_source
from selection.sources.analysis_cache import AnalysisCache
from selection.sources.deps_artifact import BadArtifact, read_artifact
from selection.sources.deps_store import UnusableMap, load_observed, public_version
from selection.sources.mirror import Mirror
from selection.sources.native_binary import release_native_calls
from selection.sources.release_tests import (
    ReleaseTestSource,
    ReleaseTestsUnavailable,
    ensure_tests,
    version_tag,
)
from selection.sources.tree import DirTree, GitTree, OverlayTree, SourceTree, changed_paths
from selection.sources.versions import (
    available_versions,
    choose_release,
    looks_like_version,
    release_order_note,
)
from selection.sources.wheels import Progress
from selection.stages import TriageStage, default_registry
from selection.state import PipelineState, SelectionRequest
from selection.upstream import ParsedTrees


@dataclass
class SelectOptions:
    from_: str | None = None
    to: str | None = None
    pr: int | None = None
    base: str | None = None
    diff: Path | None = None
    pytorch_repo: Path | None = None
    pytorch_src: Path | None = None
    manifests: list[Path] = field(default_factory=list)
    cache: Path = Path.home() / ".cache" / "spyre-ci"
    widen: str = "canary"
    disabled: list[str] = field(default_factory=list)
    device: DeviceProfile = field(default_factory=lambda: DeviceProfile("spyre", "SPYRE"))
    capabilities: Path | None = None  # default: the shipped capability file
    available_versions: Callable[[], list[str]] = available_versions
    tests: ReleaseTestSource = field(default_factory=ReleaseTestSource)  # release test/ trees
    deps: str = "auto"  # recorded dependency map: auto (the cache's) | none | a JSON artifact


def _conflicts(options: SelectOptions) -> list[str]:
    """Options that the mode they are given with would silently ignore."""
    if options.pr is not None:
        given = [
            name for name, value in (("--from", options.from_), ("--to", options.to)) if value
        ] + (["--diff"] if options.diff is not None else [])
        return [f"--pr with {', '.join(given)}"] if given else []
    found = []
    if options.diff is not None and options.to:
        found.append("--diff with --to (the head is the base plus the diff)")
    if options.base:
        found.append("--base without --pr (--base is the PR's base branch)")
    return found


def _mode(options: SelectOptions) -> str:
    conflicts = _conflicts(options)
    if conflicts:
        raise BadInput(f"bad option combination: {'; '.join(conflicts)}")
    if options.diff is not None:
        return "diff"
    if options.pr is not None:
        if options.pytorch_repo is None:
            raise BadInput("--pr needs --pytorch-repo PATH (a PyTorch clone)")
        return "pr"
    if not options.from_ or not options.to:
        raise BadInput("give --from and --to (versions or refs), --pr N, or --diff FILE")
    if options.pytorch_repo is not None:
        return "range"
    for spec in (options.from_, options.to):
        if not looks_like_version(spec):
            raise BadInput(
                f"{spec!r} is not a release version; a commit or branch needs --pytorch-repo PATH"
            )
    return "release"


def _releases(
    options: SelectOptions,
    specs: list[str],
    progress: Progress | None,
    note: Callable[[str], None],
    extra: list[str],
) -> tuple[git.Repo, list[Revision]]:
    available = options.available_versions()
    mirror = Mirror(options.cache)
    versions, revisions = [], []
    for spec in specs:
        version = choose_release(spec, available)
        note(
            f"torch {version}"
            if version == spec
            else f"torch {spec} -> {version} (newest patch release)"
        )
        versions.append(version)
    order = release_order_note(*versions) if len(versions) == 2 else None
    if order is not None:
        note(order)
        extra.append(order)
    for version in versions:
        revisions.append(mirror.ensure(version, progress))
    if options.pytorch_src is None:  # --pytorch-src overrides the release's own test/
        revisions = _with_tests(mirror, versions, revisions, options.tests, note, extra)
    labelled = [
        Revision(spec, r.sha, r.version, r.upstream_sha)
        for spec, r in zip(specs, revisions, strict=True)
    ]
    return mirror.repo, labelled


def _with_tests(
    mirror: Mirror,
    versions: list[str],
    revisions: list[Revision],
    source: ReleaseTestSource,
    note: Callable[[str], None],
    extra: list[str],
) -> list[Revision]:
    """The releases with their test/ trees, for every release or for none (a test/ on one
    side only would read as every template added or removed)."""
    if source.remote is None:
        extra.append("release test/ trees: not fetched (turned off); test ids are assumed")
        return revisions
    try:
        with_tests = [ensure_tests(mirror, v, source, note) for v in versions]
    except ReleaseTestsUnavailable as exc:
        message = (
            f"release test/ trees not fetched ({exc}); test ids are assumed "
            "(--no-fetch-tests skips the attempt)"
        )
        note(message)
        extra.append(message)
        return revisions
    extra.extend(f"torch {v}: test/ from {source.remote} tag {version_tag(v)}" for v in versions)
    return with_tests


def _trees(
    repo: git.Repo, base: Revision, head: Revision, src: Path | None
) -> tuple[ParsedTrees, ParsedTrees]:
    head_tree: SourceTree = GitTree(repo, head.sha)
    if src is not None:
        if not (src / "test").is_dir():
            raise BadInput(f"--pytorch-src {src}: no test/ directory there")
        head_tree = OverlayTree(head_tree, DirTree(src))
    return ParsedTrees(GitTree(repo, base.sha)), ParsedTrees(head_tree)


def prepare(
    options: SelectOptions,
    progress: Progress | None = None,
    note: Callable[[str], None] = lambda _m: None,
) -> tuple[SelectionRequest, list[str]]:
    """The request, plus notes on what was left out (e.g. diff paths missing from the base)."""
    mode = _mode(options)
    extra: list[str] = []
    # Local inputs first: a missing manifest must not wait for a download or a fetch.
    try:
        backend = BackendScope.load(options.manifests or None)
    except Exception as exc:  # ManifestError and friends carry file:line messages
        raise BadInput(f"manifests: {exc}") from exc
    facts = load_device_facts(options.capabilities)
    if facts.problem:
        if options.capabilities is not None:  # asked for by name: not usable is bad input
            raise BadInput(f"--capabilities {options.capabilities}: {facts.problem}")
        extra.append(facts.problem)
    # a bad --deps or --diff file is bad input before any download
    given = _read_deps_file(options)
    patch = repo_source.read_diff(options.diff) if options.diff is not None else ""
    excluded: list[str] = []  # --diff paths the base tree lacks
    if mode == "release":
        repo, (base, head) = _releases(
            options, [options.from_ or "", options.to or ""], progress, note, extra
        )
    elif mode == "range":
        repo = repo_source.open_repo(options.pytorch_repo)  # type: ignore[arg-type]
        base = repo_source.resolve_ref(repo, options.from_ or "")
        head = repo_source.resolve_ref(repo, options.to or "")
    elif mode == "pr":
        repo = repo_source.open_repo(options.pytorch_repo)  # type: ignore[arg-type]
        base, head = repo_source.pull_request(repo, options.pr or 0, options.base)
    else:
        if options.pytorch_repo is not None:
            repo = repo_source.open_repo(options.pytorch_repo)
            base = repo_source.resolve_ref(repo, options.from_ or "HEAD")
        elif options.from_ and looks_like_version(options.from_):
            repo, (base,) = _releases(options, [options.from_], progress, note, extra)
        elif options.from_:
            raise BadInput(
                f"--from {options.from_}: not a release version (2.13 or 2.13.0, without a "
                "local part such as +cpu); a git ref needs --pytorch-repo PATH"
            )
        else:
            raise BadInput(
                "--diff needs a base: --pytorch-repo PATH [--from REF] or --from VERSION"
            )
        head, excluded = repo_source.apply_diff(repo, base, options.diff, patch)  # type: ignore[arg-type]
    base_trees, head_trees = _trees(repo, base, head, options.pytorch_src)
    paths = changed_paths(repo, base.sha, head.sha)
    observed, deps_note = _observed(options, base, base_trees, given)
    extra.append(deps_note)
    analysis = AnalysisCache(options.cache / "analysis.sqlite")
    native_calls, calls_note = None, ""
    # a release's library holds its C++ calls between ops (a wheel has no C++ source); a
    # --diff onto a release runs that release's library
    on_release = mode == "release" or (mode == "diff" and options.pytorch_repo is None)
    release = head.version if on_release else ""
    if release:
        native_calls, calls_note = release_native_calls(
            public_version(release), options.cache, head_trees.tree, analysis
        )
        extra.append(calls_note)
    request = SelectionRequest(
        base,
        head,
        base_trees,
        head_trees,
        paths,
        backend,
        options.device,
        options.widen,
        mode,
        facts,
        observed=observed,
        cache=analysis,
        unanalysed=excluded,
        base_is_release=on_release,
        native_calls=native_calls,
        native_calls_note=calls_note,
    )
    return request, extra


_VERSION_LINE = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE)


def base_torch_version(base: Revision, trees: ParsedTrees) -> str:
    """The base's torch version: the release's, else what its torch/version.py says."""
    if base.version:
        return base.version
    found = _VERSION_LINE.search(trees.tree.read("torch/version.py") or "")
    return found.group(1) if found else ""


def _read_deps_file(options: SelectOptions) -> ObservedMap | None:
    """The map of `--deps FILE`, read and checked (schema, device); None for auto/none."""
    if options.deps in ("auto", "none"):
        return None
    path = Path(options.deps)
    try:
        observed = ObservedMap.from_document(read_artifact(path))
    except BadArtifact as exc:
        hint = "" if path.exists() else " (--deps takes auto, none or a spyre-ci/deps artifact)"
        raise BadInput(f"--deps {path}: {exc}{hint}") from exc
    observed.source = str(path)
    device = options.device.name
    if observed.device != device:
        raise BadInput(
            f"--deps {path}: recorded on device {observed.device!r}, not {device!r} (--device-name)"
        )
    return observed


def _check_serves(path: Path, observed: ObservedMap, version: str) -> None:
    """A map recorded on another release than the base would decide links it knows nothing
    about (the device is checked when the file is read)."""
    if version and public_version(observed.torch_version) != public_version(version):
        raise BadInput(
            f"--deps {path}: recorded on torch {observed.torch_version}, "
            f"but the base is torch {version}"
        )


def _observed(
    options: SelectOptions, base: Revision, trees: ParsedTrees, given: ObservedMap | None
) -> tuple[ObservedMap | None, str]:
    """The recorded dependency map to use (`given`: the --deps file's), and a note saying
    which (or why none)."""
    device = options.device.name
    if options.deps == "none":
        return None, "recorded dependencies: not used (--deps none): static links only"
    if given is not None:
        path, observed = Path(options.deps), given
        _check_serves(path, observed, base_torch_version(base, trees))
        return observed, f"recorded dependencies: {observed.describe()}"
    version = base_torch_version(base, trees)
    try:
        found = load_observed(options.cache, version, device) if version else None
    except UnusableMap as exc:
        return None, f"recorded dependencies: not used, {exc}: static links only"
    if found is None:
        return None, (
            f"recorded dependencies: none for torch {version or '(unknown version)'} on {device} "
            f"in the cache: static links only ({_how_to_record(version)})"
        )
    return found, (
        f"recorded dependencies: {found.describe()}, {len(found.recorded)} (op, dtype) pairs"
    )


def _how_to_record(version: str) -> str:
    """`deps record` records the torch it runs with: for another release, say where."""
    try:
        installed = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        installed = ""
    if version and public_version(installed) == public_version(version):
        return "record one with `spyre-ci deps record`"
    return (
        f"`spyre-ci deps record` records the installed torch ({installed or 'none'}): record "
        f"in an environment with torch=={public_version(version) or '<version>'}, then "
        "`spyre-ci deps import` its artifact here"
    )


def stage_registry(
    agent: TriageAgent | None = None,
    disabled: list[str] | None = None,
    plugins: list[tuple[Stage, str | None]] | None = None,
) -> StageRegistry:
    """The stages a run would have (built-in, installed plugins, `plugins`), `disabled` off;
    BadInput for a name no stage has. Cheap: the CLI checks `--disable-stage` with it before
    any download."""
    registry = default_registry(TriageStage(agent))
    registry.load_entry_points()
    for stage, after in plugins or []:
        registry.register(stage, after)
    try:
        registry.disable(disabled or [])
    except UnknownStage as exc:
        raise BadInput(f"--disable-stage: {exc}") from exc
    return registry


def run_pipeline(
    request: SelectionRequest,
    agent: TriageAgent | None = None,
    disabled: list[str] | None = None,
    note: Callable[[str], None] | None = None,
    file_progress: Callable[[int, int], None] | None = None,
    plugins: list[tuple[Stage, str | None]] | None = None,
) -> PipelineState:
    """Run the stages; `plugins` are extra stages as (stage, name to run after)."""
    registry = stage_registry(agent, disabled, plugins)
    state = PipelineState(request, progress=note, file_progress=file_progress)
    # The analysis builds millions of small objects (ASTs) and frees them by reference
    # counting; the cyclic collector would rescan them over and over (5x the parse time).
    collecting = gc.isenabled()
    gc.disable()
    try:
        registry.run(state)
    finally:
        if collecting:
            gc.enable()
        if request.cache is not None:
            request.cache.flush()
    return state

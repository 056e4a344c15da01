"""The mutation benchmark's shells: selection in-process, truth in subprocesses, the probe.

- `select_modes`: `spyre-ci select --from 2.13.0 --diff m.patch` through selection.pipeline
  (prepare once, then run_pipeline with the recorded map and without it: the second run
  reuses the parsed trees, so the two modes alternate who goes first);
- `TruthRunner`: one scratch copy of the installed torch's Python sources
  (`spyre_ci.deps.truth.scratch_torch`), a mutation written into it, the pairs digested by
  `python -m spyre_ci.deps.truth` with the copy first on PYTHONPATH, the file restored;
  the unmutated baseline run twice (in two processes side by side, then again with the
  halves swapped and their order reversed) through the same copy, cached per pair under the
  cache directory;
- `probe`: bench/mutation_probe.py (import-time functions, own ATen ops, backward pairs).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mutations.truth import Digest, Instance, OpFacts, Pair, Selected

from spyre_ci.deps import ALL_PATHS, COMPILED_PATHS, FORWARD_COMPILE

ROOT = Path(__file__).resolve().parents[1]
VERSION = "2.13.0"
UNCOMPILED_PATHS = tuple(p for p in ALL_PATHS if p not in COMPILED_PATHS)
TRUTH_OPTIONS = ("--max-samples", "4", "--compile-samples", "1")  # as `deps record` runs
# The forward-only probe (TruthRunner.forward_compiled): as many samples as the eager paths
# run, since the tests it stands for (FakeTensor's) trace every sample.
FORWARD_PROBE_OPTIONS = ("--compile-samples", "4")


@dataclass
class ModeRun:
    selected: Selected
    cpu_seconds: float
    wall_seconds: float
    reused: list[Instance]


def _selected(state: Any) -> Selected:
    pairs, direct = set(), set()
    for candidate in state.candidates.values():
        inst = candidate.instance
        if inst.op is None or inst.dtype is None:
            continue
        pair = (inst.database, inst.op, inst.dtype)
        pairs.add(pair)
        if any(c.stage == "map" and c.kind != "canary" for c in candidate.causes):
            direct.add(pair)
    mapped = state.mapped
    return Selected(
        frozenset(state.candidates), frozenset(pairs), frozenset(direct), state.reused_total,
        tuple(mapped.no_effect) if mapped else (), tuple(mapped.blind_spots) if mapped else (),
    )  # fmt: skip


def _instances(state: Any) -> list[Instance]:
    from selection.links.index import tracing_rule
    from selection.stages.triage import templates_without

    traces = tracing_rule(state.universe, state.request.facts)
    gradient_free = templates_without(state, "computes_gradients")  # as the triage reads them
    return [
        Instance(
            i.node_id,
            (i.database, i.op, i.dtype) if i.op is not None and i.dtype is not None else None,
            i.test_class,
            i.template,
            traces(i),
            (i.file, i.test_class, i.template) not in gradient_free,
        )
        for i in state.reused
    ]


def select_modes(
    patch: Path, cache: Path, observed: Any, static_first: bool, want_reused: bool
) -> dict[str, ModeRun]:
    """Both modes over one patch: "map" (the recorded map) and "static" (--deps none)."""
    from selection.pipeline import SelectOptions, prepare, run_pipeline
    from selection.sources.release_tests import ReleaseTestSource

    wall, cpu = time.perf_counter(), time.process_time()
    options = SelectOptions(
        from_=VERSION, diff=patch, cache=cache, available_versions=lambda: [VERSION],
        tests=ReleaseTestSource(None), deps="none",
    )  # fmt: skip
    request, _ = prepare(options)
    shared = (time.process_time() - cpu, time.perf_counter() - wall)
    modes = ["static", "map"] if static_first else ["map", "static"]
    runs = {}
    for mode in modes:
        if mode == "map" and observed is None:
            continue
        request.observed = observed if mode == "map" else None
        wall, cpu = time.perf_counter(), time.process_time()
        state = run_pipeline(request)
        runs[mode] = ModeRun(
            _selected(state),
            time.process_time() - cpu + shared[0],
            time.perf_counter() - wall + shared[1],
            _instances(state) if want_reused and mode == "static" else [],
        )
    return runs


def calibrate(sources: dict[str, str], work: Path, cache: Path) -> list[Instance]:
    """The reused instances, from one selection over a comment added to torch/version.py
    (which must select nothing): the same scope the selection measures fractions against."""
    from mutations.edits import unified_patch

    path = "torch/version.py"
    text = sources[path]
    patch = work / "calibration.patch"
    patch.write_text(unified_patch(path, text, text + "# mutation benchmark: calibration\n"))
    run = select_modes(patch, cache, None, static_first=True, want_reused=True)["static"]
    if run.selected.node_ids:
        raise RuntimeError(f"a comment in {path} selected {len(run.selected.node_ids)} tests")
    return run.reused


def probe(pairs: Sequence[Pair]) -> tuple[set[str], OpFacts]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "mutation_probe.py")],
        input=json.dumps([list(p) for p in pairs]), capture_output=True, text=True,
        check=False, cwd=ROOT,
    )  # fmt: skip
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"bench/mutation_probe.py exited {done.returncode}: {last}")
    doc = json.loads(done.stdout)
    facts = OpFacts(
        {k: frozenset(v) for k, v in doc["aten_names"].items()},
        frozenset((a, b, c) for a, b, c in doc["backward"]),
    )
    return set(doc["import_time"]), facts


def _code_hash() -> str:
    """What a digest depends on besides torch: the runner and the reference device (its
    code and the capability file it loads)."""
    digest = hashlib.sha256(VERSION.encode() + " ".join(TRUTH_OPTIONS).encode())
    files = sorted((ROOT / "spyre_ci" / "deps").glob("*.py"))
    files += sorted((ROOT / "torch_spyre_ref").rglob("*.py"))
    files += [ROOT / "torch_spyre_ref" / "capabilities.yaml"]
    files += [ROOT / "test_manifests" / "capabilities.py"]
    for path in files:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _merged(runs: Iterable[dict[Pair, Digest]]) -> dict[Pair, Digest]:
    found: dict[Pair, Digest] = {}
    for run in runs:
        found.update(run)
    return found


def _digests(run: Any) -> dict[Pair, Digest]:
    return {
        pair: Digest(d.status, d.digest, dict(d.paths), d.steps, d.errors)
        for pair, d in run.digests.items()
    }


class MutatedTorchFailed(RuntimeError):
    """The truth runner process failed as a whole (not one pair): with the baseline torch a
    bench error, with a mutated one the mutation's effect on every pair."""


class TruthRunner:
    def __init__(self, scratch: Path, cache: Path) -> None:
        from spyre_ci.deps.truth import scratch_torch

        self.root = scratch_torch(scratch)
        self.cache_file = cache / "bench-mutations" / f"baseline-{_code_hash()}.json"

    def _run(
        self, pairs: Sequence[Pair], paths: Sequence[str] = (), extra: Sequence[str] = ()
    ) -> dict[Pair, Digest]:
        from spyre_ci.deps.truth import run_digests

        options = [*TRUTH_OPTIONS, *(("--paths", ",".join(paths)) if paths else ()), *extra]
        try:
            run = run_digests(list(pairs), pythonpath=[self.root], options=options)
        except RuntimeError as exc:  # the runner exited non-zero before answering
            raise MutatedTorchFailed(str(exc)) from exc
        if not Path(run.torch_file).is_relative_to(self.root):
            raise RuntimeError(f"the truth run imported {run.torch_file}, not the scratch copy")
        return _digests(run)

    def _pyc_gone(self, path: str) -> None:
        """A pyc of the other text may carry the same mtime (seconds) and size: drop it."""
        file = self.root / path
        for pyc in (file.parent / "__pycache__").glob(f"{file.stem}.*.pyc"):
            pyc.unlink(missing_ok=True)

    def forward_compiled(
        self, path: str, text: str, pairs: Sequence[Pair]
    ) -> tuple[dict[Pair, Digest], dict[Pair, Digest]]:
        """The pairs' forward-only compiled digests before and after the mutation, over more
        samples than `compile` runs, each compiled afresh (`FORWARD_PROBE_OPTIONS`); when the
        run fails as a whole, none (every pair stays truth: `truth.forward_only`)."""
        try:
            before = self._run(pairs, [FORWARD_COMPILE], FORWARD_PROBE_OPTIONS)
            after, _ = self.after(path, text, pairs, [FORWARD_COMPILE], FORWARD_PROBE_OPTIONS)
        except MutatedTorchFailed:
            return {}, {}
        return before, after

    def after(
        self,
        path: str,
        text: str,
        pairs: Sequence[Pair],
        paths: Sequence[str] = (),
        extra: Sequence[str] = (),
    ) -> tuple[dict[Pair, Digest], float]:
        """Digests of the pairs with `path` replaced by `text` in the scratch copy (over
        `paths`: all by default)."""
        file = self.root / path
        original = file.read_text(encoding="utf-8")
        start = time.perf_counter()
        try:
            file.write_text(text, encoding="utf-8")
            self._pyc_gone(path)
            try:
                return self._run(pairs, paths, extra), time.perf_counter() - start
            except MutatedTorchFailed as exc:
                if paths:
                    raise  # a probe over some paths: the caller decides
                if len(pairs) > 1:  # which pair killed the process: each on its own
                    return {p: self._one_after_crash(p) for p in pairs}, time.perf_counter() - start
                return {pairs[0]: self._crashed(pairs[0], exc)}, time.perf_counter() - start
        finally:
            file.write_text(original, encoding="utf-8")
            self._pyc_gone(path)

    def _one_after_crash(self, pair: Pair) -> Digest:
        try:
            return self._run([pair])[pair]
        except MutatedTorchFailed as exc:
            return self._crashed(pair, exc)

    def _crashed(self, pair: Pair, exc: MutatedTorchFailed) -> Digest:
        """The pair's run killed the process (a broken import, or an error thrown on the
        autograd thread of a compiled backward): its uncompiled paths are run alone, so the
        truth can tell a crash confined to the compiled paths (mutations.truth.changed_paths)."""
        failed = Digest(f"error: the mutated torch failed: {exc}", "")
        try:
            eager = self._run([pair], paths=UNCOMPILED_PATHS)[pair]
        except MutatedTorchFailed:
            return failed  # the mutation breaks the eager paths too (or torch itself)
        if eager.status != "ok":
            return failed
        crashed = dict.fromkeys(COMPILED_PATHS, "the process crashed")
        return Digest("ok", "crashed in a compiled path", {**eager.paths, **crashed})

    def alone(self, path: str, text: str, pairs: Sequence[Pair]) -> dict[Pair, Digest]:
        """Each pair's digest after the mutation, in a process of its own."""
        found: dict[Pair, Digest] = {}
        for pair in pairs:
            found.update(self.after(path, text, [pair])[0])
        return found

    def baseline(
        self, pairs: Sequence[Pair], progress: Callable[[str], None]
    ) -> tuple[dict[Pair, Digest], dict[Pair, Digest]]:
        """Two unmutated runs (the second in reversed order, each pair beside other pairs),
        cached per pair."""
        cached = self._cached()
        missing = sorted(set(pairs) - cached.keys())
        if missing:
            progress(f"baseline: {len(missing)} pairs, twice")
            halves = [h for h in (missing[0::2], missing[1::2]) if h]
            with ThreadPoolExecutor(max_workers=2) as pool:  # the selections are done by now
                first = _merged(pool.map(self._run, halves))
                second = _merged(pool.map(self._run, [h[::-1] for h in halves[::-1]]))
            for pair in missing:
                a, b = first.get(pair), second.get(pair)
                if a is not None and b is not None:
                    cached[pair] = (a, b)
            self._store(cached)
        return (
            {p: cached[p][0] for p in pairs if p in cached},
            {p: cached[p][1] for p in pairs if p in cached},
        )

    def _cached(self) -> dict[Pair, tuple[Digest, Digest]]:
        try:
            rows = json.loads(self.cache_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {
            (r[0], r[1], r[2]): (Digest(r[3], r[4], r[5]), Digest(r[6], r[7], r[8]))
            for r in rows
            if len(r) == 9  # older rows kept no per-path digests: run those pairs again
        }

    def _store(self, cached: dict[Pair, tuple[Digest, Digest]]) -> None:
        rows = [
            [*p, a.status, a.digest, dict(a.paths), b.status, b.digest, dict(b.paths)]
            for p, (a, b) in sorted(cached.items())
        ]
        self.cache_file.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.cache_file.with_suffix(".tmp")
        temporary.write_text(json.dumps(rows), encoding="utf-8")
        temporary.replace(self.cache_file)

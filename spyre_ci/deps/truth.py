"""Ground truth by execution: which (op, dtype) pairs a change to torch's Python code affects.

Runs each pair's samples through the same paths as `spyre-ci deps record`
(`spyre_ci.deps.paths`: eager, method, in-place, out=, backward, torch.compile), with fixed
seeds and one intra-op thread, and reduces everything that comes out to a digest: output
and gradient tensors (dtype, shape, strides, exact bytes), other values by their repr, and
each step's error as exception type plus message head (addresses blanked). Running it twice
on the same torch gives the same digests; running it with a mutated copy of torch's Python
sources first on `sys.path` shows which pairs the mutation changes.

API (torch is imported only by `digest_pairs` and the entry point)::

    from spyre_ci.deps.truth import digest_pairs, run_digests, scratch_torch, changed_pairs

    before = digest_pairs([("opinfo", "nn.functional.silu", "float32")])   # in this process
    root = scratch_torch(Path("/tmp/scratch"))   # /tmp/scratch/torch: *.py copied, rest linked
    # ... edit /tmp/scratch/torch/nn/functional.py ...
    after = run_digests(pairs, pythonpath=[root])    # a subprocess importing the copy
    assert after.torch_file.startswith(str(root))
    changed_pairs(before, after.digests)             # {pair, ...} whose digest differs

    python -m spyre_ci.deps.truth --pair opinfo:nn.functional.silu:float32 [--pair ...]
        [--pairs-file FILE (JSON list of [database, op, dtype])] [--out FILE.json]
        [--max-samples 32] [--compile-samples 1] [--paths eager,backward,...]
        [--backend-module torch_spyre_ref] [--compile-backend spyre] [--seed 0] [--repeat 1]

The entry point writes (to --out, else stdout) `{"torch_file", "torch_version", "device",
"pairs": [{"database", "op", "dtype", "status", "digest", "steps", "errors", "paths":
{path: digest}}]}`. `status` is "ok", the set-up error of a pair that could not run at all
(unknown entry, sample generation failed), or "unstable" when `--repeat 2` saw two different
digests (such a pair cannot serve as truth). Exit 0, or 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selection.observed import Pair
from spyre_ci.deps import ALL_PATHS, FORWARD_COMPILE


@dataclass(frozen=True)
class PairDigest:
    pair: Pair
    status: str  # "ok" | set-up error head | "unstable"
    digest: str
    steps: int = 0
    errors: int = 0
    paths: Mapping[str, str] = field(default_factory=dict)

    def to_row(self) -> dict[str, Any]:
        database, op, dtype = self.pair
        return {"database": database, "op": op, "dtype": dtype, "status": self.status,
                "digest": self.digest, "steps": self.steps, "errors": self.errors,
                "paths": dict(self.paths)}  # fmt: skip

    @staticmethod
    def from_row(row: Mapping[str, Any]) -> PairDigest:
        pair = (str(row["database"]), str(row["op"]), str(row["dtype"]))
        return PairDigest(pair, row["status"], row["digest"], row["steps"], row["errors"],
                          dict(row["paths"]))  # fmt: skip


def changed_pairs(before: Mapping[Pair, PairDigest], after: Mapping[Pair, PairDigest]) -> set[Pair]:
    """Pairs present in both whose digest (or status) differs."""
    return {
        pair
        for pair in before.keys() & after.keys()
        if (before[pair].digest, before[pair].status) != (after[pair].digest, after[pair].status)
    }


# -- digests (torch imported lazily) ---------------------------------------------------------


def _feed(digest: Any, value: Any) -> None:
    import torch

    if isinstance(value, torch.Tensor):
        tensor = value.detach()
        if tensor.layout != torch.strided:
            tensor = tensor.to_dense()
        tensor = tensor.resolve_conj().resolve_neg().cpu()
        digest.update(f"T{tensor.dtype}{tuple(tensor.shape)}{tensor.stride()}".encode())
        digest.update(tensor.contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(value, (list, tuple)):
        digest.update(f"{type(value).__name__}[{len(value)}".encode())
        for item in value:
            _feed(digest, item)
        digest.update(b"]")
    elif isinstance(value, dict):
        digest.update(f"dict[{len(value)}".encode())
        for key in sorted(value, key=repr):
            digest.update(repr(key).encode())
            _feed(digest, value[key])
        digest.update(b"]")
    elif value is None or isinstance(value, (bool, int, float, complex, str, torch.dtype)):
        digest.update(repr(value).encode())
    else:
        digest.update(f"<{type(value).__module__}.{type(value).__qualname__}>".encode())


def _digest_once(entries: Any, pair: Pair, settings: Any) -> PairDigest:
    from spyre_ci.deps.execute import error_head, pair_steps, run_steps
    from spyre_ci.deps.memos import clear_torch_caches

    # as the recorder does: what a pair computes must not depend on the pairs run before it
    # in the process (a memo filled by mutated code, a fake-tensor result cached by another)
    clear_torch_caches()
    whole = hashlib.sha256()
    per_path: dict[str, Any] = {}
    steps = errors = 0
    try:
        for result in run_steps(pair_steps(entries, pair, settings)):
            steps += 1
            errors += bool(result.error)
            for digest in (whole, per_path.setdefault(result.path, hashlib.sha256())):
                digest.update(f"|{result.path}:{result.sample}:".encode())
                if result.error:
                    digest.update(f"E:{result.error}".encode())
                else:
                    _feed(digest, result.value)
    except Exception as exc:  # set-up failed: unknown entry, sample generation raised
        head = error_head(exc)
        return PairDigest(pair, head, hashlib.sha256(head.encode()).hexdigest(), steps, errors)
    paths = {path: d.hexdigest() for path, d in per_path.items()}
    return PairDigest(pair, "ok", whole.hexdigest(), steps, errors, paths)


def digest_pairs(
    pairs: Iterable[Pair],
    *,
    backend_module: str = "torch_spyre_ref",
    compile_backend: str = "spyre",
    max_samples: int = 32,
    compile_samples: int = 1,
    seed: int = 0,
    paths: Sequence[str] = ALL_PATHS,
    repeat: int = 1,
) -> dict[Pair, PairDigest]:
    """Digest each pair in this process (imports torch and the backend)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # reductions split the same way on every run
    try:
        return _digest_all(pairs, backend_module, compile_backend, max_samples,
                           compile_samples, seed, paths, repeat)  # fmt: skip
    finally:
        torch.set_num_threads(threads)


def _digest_all(
    pairs: Iterable[Pair],
    backend_module: str,
    compile_backend: str,
    max_samples: int,
    compile_samples: int,
    seed: int,
    paths: Sequence[str],
    repeat: int,
) -> dict[Pair, PairDigest]:
    from spyre_ci.deps.execute import Entries, open_device
    from spyre_ci.deps.paths import RunSettings

    settings = RunSettings(
        device=open_device(backend_module), compile_backend=compile_backend,
        max_samples=max_samples, compile_samples=compile_samples, seed=seed, paths=tuple(paths),
    )  # fmt: skip
    entries = Entries()
    found: dict[Pair, PairDigest] = {}
    for pair in pairs:
        runs = [_digest_once(entries, pair, settings) for _ in range(max(1, repeat))]
        first = runs[0]
        if any(r.digest != first.digest for r in runs[1:]):
            first = PairDigest(
                pair, "unstable", first.digest, first.steps, first.errors, first.paths
            )
        found[pair] = first
    return found


# -- subprocess -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DigestRun:
    torch_file: str  # the torch/__init__.py the subprocess imported
    torch_version: str
    device: str
    digests: dict[Pair, PairDigest]


def run_digests(
    pairs: Sequence[Pair],
    *,
    pythonpath: Sequence[Path] = (),
    python: str = sys.executable,
    timeout: float = 3600.0,
    options: Sequence[str] = (),
) -> DigestRun:
    """`python -m spyre_ci.deps.truth` over `pairs` with `pythonpath` first on sys.path
    (e.g. a mutated `scratch_torch` copy); `options` are extra entry-point arguments."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [*(str(p) for p in pythonpath), *filter(None, [env.get("PYTHONPATH", "")])]
    )
    command = [python, "-m", "spyre_ci.deps.truth", "--pairs-file", "-", *options]
    done = subprocess.run(
        command, input=json.dumps([list(p) for p in pairs]), capture_output=True, text=True,
        env=env, timeout=timeout, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"python -m spyre_ci.deps.truth exited {done.returncode}: {last}")
    doc = json.loads(done.stdout)
    digests = {d.pair: d for d in map(PairDigest.from_row, doc["pairs"])}
    return DigestRun(doc["torch_file"], doc["torch_version"], doc["device"], digests)


def scratch_torch(dest: Path, torch_root: Path | None = None) -> Path:
    """A copy of the installed torch's Python sources under `dest/torch` (every `*.py`
    copied, everything else linked; directories without Python files linked whole), to be
    edited and put first on PYTHONPATH. Returns `dest`. The installed torch is not touched."""
    from spyre_ci.deps.scope import installed_torch_root

    if (dest / "torch").exists():
        raise FileExistsError(f"{dest / 'torch'} exists: give scratch_torch a new directory")
    source = (torch_root or installed_torch_root()) / "torch"
    with_python = {source}
    for path in source.rglob("*.py"):
        with_python.update(path.parents)
    for directory, subdirs, files in os.walk(source):
        here = Path(directory)
        target = dest / "torch" / here.relative_to(source)
        target.mkdir(parents=True, exist_ok=True)
        for name in list(subdirs):
            if name == "__pycache__" or here / name not in with_python:
                subdirs.remove(name)
                if name != "__pycache__":
                    (target / name).symlink_to(here / name, target_is_directory=True)
        for name in files:
            if name.endswith(".py"):
                shutil.copy2(here / name, target / name)
            else:
                (target / name).symlink_to(here / name)
    return dest


# -- entry point ------------------------------------------------------------------------------


def _parse_pair(text: str) -> Pair:
    parts = text.split(":")
    if len(parts) != 3 or not all(parts):
        raise argparse.ArgumentTypeError(f"{text!r}: expected database:op:dtype")
    return parts[0], parts[1], parts[2]


def _read_pairs(source: str) -> list[Pair]:
    text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    rows = json.loads(text)
    if not isinstance(rows, list) or not all(
        isinstance(r, list) and len(r) == 3 and all(isinstance(v, str) for v in r) for r in rows
    ):
        raise ValueError("expected a JSON list of [database, op, dtype]")
    return [(r[0], r[1], r[2]) for r in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spyre_ci.deps.truth")
    parser.add_argument("--pair", action="append", type=_parse_pair, default=[])
    parser.add_argument("--pairs-file", help="JSON list of [database, op, dtype]; - for stdin")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--max-samples", type=int, default=32)
    parser.add_argument("--compile-samples", type=int, default=1)
    parser.add_argument("--paths", default=",".join(ALL_PATHS))
    parser.add_argument("--backend-module", default="torch_spyre_ref")
    parser.add_argument("--compile-backend", default="spyre")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    pairs = list(args.pair)
    if args.pairs_file:
        try:
            pairs += _read_pairs(args.pairs_file)
        except (OSError, ValueError) as exc:
            parser.error(f"--pairs-file {args.pairs_file}: {exc}")
    if not pairs:
        parser.error("no pairs: give --pair or --pairs-file")
    unknown = sorted(set(args.paths.split(",")) - {*ALL_PATHS, FORWARD_COMPILE})
    if unknown:
        known = ", ".join((*ALL_PATHS, FORWARD_COMPILE))
        parser.error(f"--paths: unknown path {unknown[0]!r} (known: {known})")
    return _emit(args, pairs)


def _emit(args: argparse.Namespace, pairs: list[Pair]) -> int:
    stdout = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever torch or the backend prints goes to stderr
    digests = digest_pairs(
        pairs, backend_module=args.backend_module, compile_backend=args.compile_backend,
        max_samples=args.max_samples, compile_samples=args.compile_samples, seed=args.seed,
        paths=tuple(p for p in args.paths.split(",") if p), repeat=args.repeat,
    )  # fmt: skip
    import torch

    doc = {
        "torch_file": str(Path(torch.__file__).resolve(strict=False)),
        "torch_version": torch.__version__,
        "device": torch._C._get_privateuse1_backend_name(),
        "pairs": [d.to_row() for d in digests.values()],
    }
    text = json.dumps(doc, indent=1) + "\n"
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    else:
        stdout.write(text)
    stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

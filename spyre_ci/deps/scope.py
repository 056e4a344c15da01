"""The in-scope (database, op, dtype) pairs: what the manifests run, as `spyre-ci select`
counts it. Torch-free: the installed torch's Python files are read as a source tree.

The pairs are those of the reused instances of the selection's universe (the manifests'
templates enumerated over the installed torch's OpInfo/ModuleInfo databases, each instance
resolved by the manifests), so `select` and `deps record` agree on what "in scope" means.
Filters: `--ops` (an OpInfo/ModuleInfo name, or the name without its variant, matches),
`--dtypes`, and a capability file (an OpInfo pair is kept when the file supports the op and
dtype, a ModuleInfo pair when it supports the dtype).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from selection.observed import Pair

MODULEINFO = "moduleinfo"


class ScopeError(ValueError):
    """The manifests, the capability file or the torch tree cannot be used; names which."""


def installed_torch_root() -> Path:
    """The directory holding the installed `torch` package, found without importing it."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise ScopeError("torch is not installed (pip install 'spyre-ci[backend]')")
    return Path(spec.origin).resolve().parent.parent


def reused_pairs(
    manifests: Sequence[Path] | None, torch_root: Path, device: str = "spyre"
) -> list[Pair]:
    """Every (database, op, dtype) some reused instance runs, sorted."""
    from selection.backend import BackendScope
    from selection.enumerate import DeviceProfile
    from selection.sources.tree import DirTree
    from selection.universe import build_universe
    from selection.upstream import ParsedTrees, load_database

    try:
        backend = BackendScope.load(list(manifests) if manifests else None)
    except Exception as exc:  # ManifestError and friends carry file:line messages
        raise ScopeError(f"manifests: {str(exc).splitlines()[0]}") from exc
    trees = ParsedTrees(DirTree(torch_root))
    db = load_database(trees)
    if not db.entries:
        raise ScopeError(f"{torch_root}: no OpInfo database under torch/testing/_internal")
    universe = build_universe(trees, db, backend, DeviceProfile(device, device.upper()))
    pairs = {
        (inst.database, inst.op, inst.dtype)
        for inst in universe.instances
        if inst.op is not None and inst.dtype is not None and backend.runs(inst)
    }
    return sorted(pairs)


@dataclass(frozen=True)
class PairFilter:
    ops: frozenset[str] = frozenset()
    dtypes: frozenset[str] = frozenset()

    def keeps(self, pair: Pair) -> bool:
        _, op, dtype = pair
        if self.dtypes and dtype not in self.dtypes:
            return False
        if not self.ops:
            return True
        return op in self.ops or any(op.startswith(f"{name}.") for name in self.ops)


def capability_filter(pairs: Iterable[Pair], capabilities: Path | None) -> list[Pair]:
    """Keep what the capability file supports (all pairs when no file is given)."""
    if capabilities is None:
        return list(pairs)
    from test_manifests.capabilities import CapabilityError, load_capabilities

    try:
        caps = load_capabilities(capabilities)
    except CapabilityError as exc:
        raise ScopeError(str(exc.issues[0]) if exc.issues else str(exc)) from exc
    dtypes = set(caps.supported_dtypes())
    kept = []
    for pair in pairs:
        database, op, dtype = pair
        if database == MODULEINFO:
            if dtype in dtypes:
                kept.append(pair)
        elif caps.is_supported(op, dtype) or caps.is_supported(op.rsplit(".", 1)[0], dtype):
            kept.append(pair)
    return kept

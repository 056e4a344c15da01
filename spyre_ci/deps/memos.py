"""Clear torch's memoized functions between pairs, so each pair's recording sees what it runs.

A function behind `functools.lru_cache` / `functools.cache` runs only the first time its
arguments are seen in a process: without clearing, the first pair that needs it is credited
with it (and with everything it calls) and later pairs that rely on the cached value are
not -- yet a change to the function changes their results too. Clearing every such cache
of the `torch` package before each pair makes each recording see the memoized code it
depends on.

FakeTensorMode's dispatch cache is one such memo kept in a class attribute: on a hit (the
same op over inputs of the same shape, dtype and strides, as another pair traced before in
the process) it returns the cached fake output without running the op's meta kernel, so the
later pair would not be credited with `meta_bmm` or `elementwise_meta` -- yet a change to
them changes its compiled result. It is cleared too. (Other memos kept in plain dicts
cannot be found this way: docs/deps.md.)

Clearing has a price: refilling Dynamo's trace rules, the overridable-function tables and
the backend registry made up a quarter of a pair's CPU time (docs/benchmarks.md). Those are
*constant memos*: lru caches of functions that take no argument, whose one value is the same
for every pair. `MemoLedger` keeps them filled and credits their code instead: the first
time a pair uses one, the ledger runs its function once more on its own, under the same
probes as a pair, and keeps what that ran (its *footprint*: Python code and ATen ops, the
footprints of the constant memos it uses in turn included); every later pair that uses the
memo (its hits or misses rose during the pair) is credited with that footprint, as if it had
filled the memo itself. Memos that take arguments are still cleared before every pair.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

_CacheWrapper = functools._lru_cache_wrapper  # the type lru_cache and cache return


def _unwrapped(value: object) -> object:
    """A staticmethod's or classmethod's function; anything else as it is (no getattr on
    arbitrary objects, and type() rather than isinstance(): some objects answer attribute
    reads, `__class__` included, with side effects or deprecation warnings)."""
    if type(value) in (staticmethod, classmethod):
        return value.__func__  # type: ignore[attr-defined]
    return value


def _caches_in(namespace: dict[str, Any]) -> Iterator[Any]:
    for value in list(namespace.values()):
        target = _unwrapped(value)
        if type(target) is _CacheWrapper:
            yield target
        elif type(value) is type and str(vars(value).get("__module__", "")).startswith("torch"):
            for member in list(vars(value).values()):
                inner = _unwrapped(member)
                if type(inner) is _CacheWrapper:
                    yield inner


def torch_caches() -> list[Any]:
    """Every lru_cache wrapper defined in a loaded module of the torch package."""
    found: dict[int, Any] = {}
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "torch" or name.startswith("torch.")):
            continue
        namespace = getattr(module, "__dict__", None)
        if isinstance(namespace, dict):
            for cache in _caches_in(namespace):
                found[id(cache)] = cache
    return list(found.values())


def clear_fake_tensor_cache() -> None:
    """Empty FakeTensorMode's dispatch cache, if fake tensors were imported."""
    module = sys.modules.get("torch._subclasses.fake_tensor")
    mode = getattr(module, "FakeTensorMode", None) if module is not None else None
    if mode is not None:
        mode.cache_clear()


def clear_torch_caches() -> int:
    """Clear them all, and the fake-tensor dispatch cache; the number of lru caches cleared
    (modules loaded since the last call included)."""
    caches = torch_caches()
    for cache in caches:
        cache.cache_clear()
    clear_fake_tensor_cache()
    return len(caches)


def is_constant(cache: Any) -> bool:
    """A memo of a function that takes no argument: one value per process."""
    code = getattr(getattr(cache, "__wrapped__", None), "__code__", None)
    if code is None:
        return False
    varargs = code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    return code.co_argcount == 0 and code.co_kwonlyargcount == 0 and not varargs


@dataclass(frozen=True)
class Footprint:
    """What running a function executed: code keys (see spyre_ci.deps.symbols) and ATen ops."""

    code: frozenset[Any] = frozenset()
    aten: frozenset[str] = frozenset()

    def __or__(self, other: Footprint) -> Footprint:
        return Footprint(self.code | other.code, self.aten | other.aten)


# Runs a thunk under the recorder's probes and returns what it executed.
Observe = Callable[[Callable[[], object]], Footprint]
Uses = dict[int, int]  # id(cache) -> hits + misses


def _uses(caches: list[Any]) -> Uses:
    found: Uses = {}
    for cache in caches:
        info = cache.cache_info()
        found[id(cache)] = info.hits + info.misses
    return found


@dataclass
class MemoLedger:
    """Per device process: clears the memos that take arguments before each pair, keeps the
    constant ones filled, and credits each constant memo's footprint to the pairs using it."""

    observe: Observe
    _modules: int = -1
    _varying: list[Any] = field(default_factory=list)
    _constant: list[Any] = field(default_factory=list)
    # id(cache) -> (the cache, kept alive so its id is never another's; its footprint)
    _footprints: dict[int, tuple[Any, Footprint]] = field(default_factory=dict)

    def _refresh(self) -> None:
        # Walking every torch module's namespace costs ~35 ms; it only changes when modules
        # are imported (memos made later, in a loaded module's namespace, are not seen).
        if len(sys.modules) == self._modules:
            return
        self._modules = len(sys.modules)
        caches = torch_caches()
        self._constant = [c for c in caches if is_constant(c)]
        self._varying = [c for c in caches if not is_constant(c)]

    def before_pair(self) -> Uses:
        """Clear what must be cleared (a constant memo too, until its footprint is known, so
        that it is filled inside a pair); the constant memos' use counts, for `used_since`."""
        self._refresh()
        for cache in self._varying:
            cache.cache_clear()
        for cache in self._constant:
            if id(cache) not in self._footprints:
                cache.cache_clear()
        clear_fake_tensor_cache()
        return _uses(self._constant)

    def uses(self) -> Uses:
        return _uses(self._constant)

    def credit(self, before: Uses, after: Uses) -> Footprint:
        """The footprints of the constant memos used between the two counts (learnt now for
        those used for the first time)."""
        used = [c for c in self._constant if after.get(id(c), 0) > before.get(id(c), 0)]
        total = Footprint()
        for cache in used:
            total = total | self._footprint(cache)
        return total

    def _footprint(self, cache: Any, seen: frozenset[int] = frozenset()) -> Footprint:
        known = self._footprints.get(id(cache))
        if known is not None and known[0] is cache:
            return known[1]
        for varying in self._varying:  # so what it calls with arguments runs again here
            varying.cache_clear()
        before = self.uses()
        run = _Quiet(cache.__wrapped__)  # not the cache: its value stays the pair's
        footprint = self.observe(run)
        after = self.uses()
        for inner in self._constant:
            if id(inner) not in seen | {id(cache)} and after[id(inner)] > before[id(inner)]:
                footprint = footprint | self._footprint(inner, seen | {id(cache)})
        if not run.raised:  # a run cut short is no footprint: it stays cleared per pair
            self._footprints[id(cache)] = (cache, footprint)
        return footprint


@dataclass
class _Quiet:
    """Runs a memo's function once more; an exception ends the run (and is remembered)."""

    function: Callable[[], object]
    raised: bool = False

    def __call__(self) -> object:
        try:
            return self.function()
        except Exception:
            self.raised = True
            return None

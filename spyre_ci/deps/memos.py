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
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator
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

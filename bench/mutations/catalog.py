"""The deterministic choice of mutations over every kind. Pure.

`generate(sources, plan, seed, reached)` collects the sites of every kind (mutations.sites,
fields, quiet, yaml_sites), splits each kind into strata by (group, reached) -- reached: an
in-scope pair executed the function / the entry or op has in-scope pairs, as the caller
decides from the recorded map -- and takes the kind's count round-robin over the strata, so
registered functions and helpers, reached and unreached code all get their share. Forced
sites (functions the brief names) come first. In each chosen site one change is drawn;
a change that leaves the code as it was (as Python sees it) is not taken.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from itertools import cycle

from mutations.edits import apply_edits
from mutations.entries import Entry, entries_in
from mutations.fields import entry_sites
from mutations.model import Mutation, Site
from mutations.op_list_sites import OP_LIST, op_list_sites
from mutations.operators import Change, change_differs
from mutations.quiet import BEHAVIOUR_FREE, behaviour_free_sites, other_device_sites
from mutations.sites import function_sites, is_database_file, parse_module
from mutations.value_branch_sites import KIND as VALUE_BRANCH
from mutations.value_branch_sites import value_branch_sites
from mutations.yaml_sites import DERIVATIVES, NATIVE, derivative_sites, native_sites

FULL_PLAN = {
    "decomposition": 24,
    "meta": 20,
    "python-ref": 24,
    "nn-functional": 24,
    "functional": 12,
    "tensor-method": 12,
    "sample-inputs": 24,
    "opinfo-field": 16,
    "native-yaml": 12,
    "derivatives-yaml": 12,
    OP_LIST: 8,
    VALUE_BRANCH: 12,
    BEHAVIOUR_FREE: 14,
    "other-device": 16,
}
QUICK_PLAN = dict.fromkeys(FULL_PLAN, 2)
KINDS = tuple(FULL_PLAN)

Reached = Callable[[Site], bool | None]


def database_entries(sources: Mapping[str, str]) -> dict[str, list[Entry]]:
    found = {}
    for path, text in sorted(sources.items()):
        tree = parse_module(text) if is_database_file(path) else None
        if tree is not None:
            found[path] = entries_in(path, tree)
    return found


def all_sites(sources: Mapping[str, str]) -> Iterator[Site]:
    entries = database_entries(sources)
    flat = [e for found in entries.values() for e in found]
    yield from function_sites(sources, flat)
    yield from op_list_sites(sources)
    yield from value_branch_sites(sources)
    yield from entry_sites(sources, entries)
    yield from behaviour_free_sites(sources)
    yield from other_device_sites(sources, entries)
    if NATIVE in sources:
        yield from native_sites(sources[NATIVE])
    if DERIVATIVES in sources:
        yield from derivative_sites(sources[DERIVATIVES])


def _strata(
    sites: list[Site], reached: Reached, rng: random.Random
) -> list[list[tuple[Site, bool | None]]]:
    buckets: dict[tuple[str, str], list[tuple[Site, bool | None]]] = {}
    for site in sites:
        hit = reached(site)
        buckets.setdefault((site.group, str(hit)), []).append((site, hit))
    ordered = [buckets[key] for key in sorted(buckets)]
    for bucket in ordered:
        rng.shuffle(bucket)
    return ordered


def _picks(
    sites: list[Site], reached: Reached, rng: random.Random
) -> Iterator[tuple[Site, bool | None]]:
    """Forced sites, then round-robin over the strata until they run out."""
    forced = [s for s in sites if s.forced]
    for site in forced:
        yield site, reached(site)
    strata = _strata([s for s in sites if not s.forced], reached, rng)
    for index in cycle(range(len(strata))):
        if not any(strata):
            return
        if strata[index]:
            yield strata[index].pop()


def _draw(site: Site, text: str, rng: random.Random) -> tuple[Change, str] | None:
    """One of the site's changes: the file still parses, and a change meant to be semantic
    changes the code (as `ast` sees it, docstrings aside)."""
    by_operator: dict[str, list[Change]] = {}
    for change in site.changes():
        by_operator.setdefault(change.operator, []).append(change)
    operators = sorted(by_operator)
    rng.shuffle(operators)  # an operator first, so drops do not crowd out the others
    ordered = []
    for operator in operators:
        rng.shuffle(by_operator[operator])
        ordered += by_operator[operator]
    for change in ordered:
        try:
            new = apply_edits(text, change.edits)
            if site.path.endswith(".yaml"):
                return change, new
            if site.kind == BEHAVIOUR_FREE:
                return change, new  # parses: see the test of every behaviour-free edit
            tree = parse_module(text)
            if tree is not None and change_differs(text, tree, change.edits):
                return change, new
        except (SyntaxError, ValueError):
            continue
    return None


def generate(
    sources: Mapping[str, str],
    plan: Mapping[str, int],
    seed: int,
    reached: Reached = lambda _s: None,
) -> list[Mutation]:
    """The mutations, `plan[kind]` of each kind (fewer only when a kind runs out of sites)."""
    by_kind: dict[str, list[Site]] = {}
    for site in all_sites(sources):
        by_kind.setdefault(site.kind, []).append(site)
    mutations: list[Mutation] = []
    for kind in KINDS:
        rng = random.Random(f"{seed}:{kind}")
        taken: set[tuple[str, str, str]] = set()
        for site, hit in _picks(by_kind.get(kind, []), reached, rng):
            if len([m for m in mutations if m.kind == kind]) >= plan.get(kind, 0):
                break
            if (site.path, site.symbol, site.group) in taken:
                continue
            drawn = _draw(site, sources[site.path], rng)
            if drawn is None:
                continue
            change, _ = drawn
            taken.add((site.path, site.symbol, site.group))
            number = len([m for m in mutations if m.kind == kind]) + 1
            mutation = Mutation(
                f"{kind}-{number:02d}", kind, site.group, site.path, site.symbol,
                change.operator, change.description, change.line, change.edits,
                site.truth, site.expect, hit,
            )  # fmt: skip
            mutations.append(mutation)
    return mutations


def mutated_text(mutation: Mutation, sources: Mapping[str, str]) -> str:
    return apply_edits(sources[mutation.path], mutation.edits)

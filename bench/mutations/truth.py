"""Ground truth of a mutation and how a selection is judged against it. Pure.

Execution truth: the pairs whose digest (spyre_ci.deps.truth) changes when the mutation is
applied to a scratch copy of torch's Python sources, among the pairs run. Running every
in-scope pair per mutation is too slow, so `plan_run` picks them: a pair that never
executed the mutated function cannot change (execution before the first mutated code is
the same), so the pairs that executed it per the recorded map are the population -- unless
the function also ran when torch and the database were imported (its effect then reaches
every pair) or the mutation is outside any function; then every in-scope pair is. To test
the recording rather than trust it, the pairs either selection mode chose are added, and a
few random control pairs. Past `cap` pairs, disagreements (executed but not selected by a
mode, or selected but not executed) go first. Pairs whose digest differs between two
unmutated runs are unstable and never truth. A pair changed only in its compiled paths
(torch.compile, forward and backward) is truth only when an in-scope instance of it traces
its op (`selection.links.index.tracing_rule`): the recording runs every pair compiled, yet a
test that never compiles cannot see a decomposition or a meta kernel. A pair changed
without executing the mutated function (per the map) is run again alone after the mutation
(`isolated_check`): one whose result then matches the baseline changed only because pairs
run before it in the same process did (state they left behind), and is not truth.

Declared truth (execution cannot tell): an entry's own in-scope pairs (an OpInfo field,
an error-input or reference function, by the entries naming it), the reused instances a
DecorateInfo names, the pairs whose entry's own ATen op is a YAML entry's op (for a
derivative formula: those whose backward runs), nothing (another device's DecorateInfo).
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mutations.model import DECORATION, ENTRIES, EXECUTION, NONE, OPS, Mutation, TruthSpec
from spyre_ci.deps import COMPILED_PATHS, FORWARD_COMPILE

Pair = tuple[str, str, str]  # (database, op full name, dtype), as selection.observed


@dataclass(frozen=True)
class Instance:
    """What the truth needs of a reused instance."""

    node_id: str
    pair: Pair | None
    test_class: str
    template: str
    traces: bool = True  # the instance traces its op (compiles, fake-tensors, exports it)
    gradients: bool = True  # its template computes gradients (selection.gradients)


@dataclass(frozen=True)
class OpFacts:
    """What the installed torch says about the in-scope pairs (bench/mutation_probe.py)."""

    aten_names: Mapping[str, frozenset[str]]  # op full name -> its own ATen op base names
    backward: frozenset[Pair]  # pairs whose backward runs (supports_autograd, dtype)


@dataclass(frozen=True)
class RunPlan:
    pairs: tuple[Pair, ...]
    population: int  # pairs that may be affected (before the cap)
    basis: str  # what the restriction relies on


def _ordered(items: Iterable[Pair], rng: random.Random) -> list[Pair]:
    found = sorted(set(items))
    rng.shuffle(found)
    return found


def plan_run(
    executed: set[Pair] | None,
    selected: Mapping[str, set[Pair]],
    in_scope: Sequence[Pair],
    cap: int,
    controls: int,
    seed: str,
) -> RunPlan:
    """The pairs to run before and after. `executed`: the in-scope pairs that executed
    the mutated function per the recorded map; None when every pair may be affected."""
    rng = random.Random(seed)
    scope = set(in_scope)
    chosen_by_modes = set().union(*selected.values()) & scope if selected else set()
    if executed is None:
        population, basis = scope, "every in-scope pair (import-time or module-level code)"
        disagreements = set(chosen_by_modes)
    else:
        population = executed | chosen_by_modes
        basis = f"{len(executed)} pairs executed it (recorded map) + the pairs selected"
        disagreements = set()
        for chosen in selected.values():
            disagreements |= (executed - chosen) | (chosen - executed)
    agreed = population - disagreements
    picks = _ordered(disagreements & scope, rng)[: max(0, cap - controls)]
    picks += _ordered(agreed - set(picks), rng)[: max(0, cap - controls - len(picks))]
    outside = [
        p for p in _ordered(scope - set(picks), rng) if executed is None or p not in population
    ]
    picks += outside[:controls]
    return RunPlan(tuple(sorted(picks)), len(population), basis)


@dataclass
class Digest:
    status: str
    digest: str
    paths: Mapping[str, str] = field(default_factory=dict)  # path -> its steps' digest
    steps: int = -1  # how many steps ran, and how many raised (-1: not known)
    errors: int = -1


def unstable_pairs(first: Mapping[Pair, Digest], second: Mapping[Pair, Digest]) -> set[Pair]:
    """Pairs whose two unmutated runs disagree (or that one run marked unstable)."""
    found = {p for p, d in first.items() if d.status == "unstable"}
    found |= {p for p, d in second.items() if d.status == "unstable"}
    found |= {p for p in first.keys() & second.keys() if _differs(first[p], second[p])}
    return found


def _differs(a: Digest, b: Digest) -> bool:
    return (a.digest, a.status) != (b.digest, b.status)


# What a test must do to run a path besides its eager forward: (trace its op, compute
# gradients). The others (`eager`, `method`, `inplace`, `out`) every test of the pair may run.
PATH_NEEDS: Mapping[str, tuple[bool, bool]] = {
    "backward": (False, True),
    **{path: (True, path.endswith("backward")) for path in COMPILED_PATHS},
}


def paths_run(inst: Instance) -> frozenset[str]:
    """The needing paths an instance runs (`PATH_NEEDS`)."""
    return frozenset(
        path
        for path, (traces, gradients) in PATH_NEEDS.items()
        if (inst.traces or not traces) and (inst.gradients or not gradients)
    )


def changed_paths(before: Digest, after: Digest) -> set[str] | None:
    """The paths whose digests differ; None when that cannot be told (a status change, a
    digest without paths): the whole pair then changed."""
    if before.status != after.status or not before.paths or not after.paths:
        return None
    return {
        path
        for path in before.paths.keys() | after.paths.keys()
        if before.paths.get(path) != after.paths.get(path)
    }


@dataclass(frozen=True)
class Changes:
    truth: set[Pair]
    # changed only in paths no in-scope instance of the pair runs: compiled ones where none
    # traces its op, a backward where none computes gradients (compiled: both)
    unreached: set[Pair]


def execution_truth(
    before: Mapping[Pair, Digest],
    after: Mapping[Pair, Digest],
    unstable: set[Pair],
    runs: Mapping[Pair, frozenset[str]] | None = None,
) -> Changes:
    """`runs`: per pair, the needing paths some in-scope instance of it runs (`pair_paths`;
    None: all)."""
    changed = {
        p
        for p in before.keys() & after.keys()
        if p not in unstable and _differs(before[p], after[p])
    }
    unreached = set()
    for pair in changed:
        paths = changed_paths(before[pair], after[pair])
        if runs is None or paths is None:
            continue
        needing = paths & PATH_NEEDS.keys()
        if paths == needing and not needing & runs.get(pair, frozenset()):
            unreached.add(pair)
    return Changes(changed - unreached, unreached)


def joint_graph_suspects(
    changes: Changes,
    before: Mapping[Pair, Digest],
    after: Mapping[Pair, Digest],
    runs: Mapping[Pair, frozenset[str]],
    backward: Collection[Pair],
) -> set[Pair]:
    """Truth pairs (OpInfo, with a backward: `backward`) whose change shows only where
    compiled, and whose in-scope tests trace the op but none with gradients: `compile`
    compiled samples requiring grad, so the joint graph's backward meta kernels ran there;
    a forward-only compile (`forward_only`) tells whether a forward trace sees the change.
    A pair without a backward compiled no gradients: its change is no joint graph's."""
    found = set()
    for pair in changes.truth:
        paths = changed_paths(before[pair], after[pair])
        tests_run = runs.get(pair, frozenset())
        if (
            pair[0] == "opinfo"
            and pair in backward
            and paths
            and paths <= COMPILED_PATHS
            and "compile" in tests_run
            and "compile_backward" not in tests_run
        ):
            found.add(pair)
    return found


def forward_only(
    suspects: set[Pair], before: Mapping[Pair, Digest], after: Mapping[Pair, Digest]
) -> set[Pair]:
    """Of the suspects, those a conclusive forward-only compile (`FORWARD_COMPILE`, before
    and after the mutation) saw unchanged: both runs fine, its steps run and none raising
    before (a probe that errs or runs nothing saw nothing, and the pair stays truth)."""
    return {p for p in suspects if _conclusive(before.get(p)) and _same(before[p], after.get(p))}


def _conclusive(digest: Digest | None) -> bool:
    return (
        digest is not None
        and digest.status == "ok"
        and FORWARD_COMPILE in digest.paths
        and digest.steps > 0
        and digest.errors == 0
    )


def _same(before: Digest, after: Digest | None) -> bool:
    return after is not None and after.status == "ok" and not _differs(before, after)


def pair_paths(reused: Iterable[Instance]) -> dict[Pair, frozenset[str]]:
    """Per pair, the needing paths some in-scope instance of it runs."""
    found: dict[Pair, frozenset[str]] = {}
    for inst in reused:
        if inst.pair is not None:
            found[inst.pair] = found.get(inst.pair, frozenset()) | paths_run(inst)
    return found


def isolated_check(
    suspects: Iterable[Pair], before: Mapping[Pair, Digest], alone: Mapping[Pair, Digest]
) -> set[Pair]:
    """Of the pairs that changed without executing the mutated function, those whose run
    alone (`alone`, a fresh process per pair) matches the baseline: order effects."""
    return {p for p in suspects if p in alone and p in before and not _differs(before[p], alone[p])}


def own_op(name: str) -> str:
    """`add_` (in-place) and `add` are one op's; `_foo` keeps its underscore."""
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def declared_truth(
    spec: TruthSpec, in_scope: Sequence[Pair], reused: Sequence[Instance], facts: OpFacts
) -> set[str]:
    """Truth items of a non-execution mutation: `pair:` or `instance:` keys."""
    if spec.mode == ENTRIES:
        return {pair_key(p) for p in in_scope if p[1] in spec.entries}
    if spec.mode == DECORATION:
        return {
            f"instance:{i.node_id}"
            for i in reused
            if i.pair is not None and i.pair[1] in spec.entries and _named(spec, i)
        }
    if spec.mode == OPS:
        wanted = {own_op(op) for op in spec.ops}
        return {
            pair_key(p)
            for p in in_scope
            if {own_op(a) for a in facts.aten_names.get(p[1], ())} & wanted
            and (not spec.backward_only or p in facts.backward)
        }
    return set()


def _named(spec: TruthSpec, inst: Instance) -> bool:
    if spec.test_class and spec.test_class != inst.test_class:
        return False
    if spec.test_name and spec.test_name != inst.template:
        return False
    return not (spec.dtypes and inst.pair and inst.pair[2] not in spec.dtypes)


def pair_key(pair: Pair) -> str:
    return "pair:" + ":".join(pair)


@dataclass(frozen=True)
class Selected:
    """What one selection run chose, as the judge needs it."""

    node_ids: frozenset[str]
    pairs: frozenset[Pair]
    direct_pairs: frozenset[Pair]  # selected through a link, not only by a canary
    reused: int
    no_effect: tuple[str, ...] = ()
    blind_spots: tuple[str, ...] = ()

    def has(self, key: str, direct: bool = False) -> bool:
        kind, _, rest = key.partition(":")
        if kind == "instance":
            return rest in self.node_ids
        pair = tuple(rest.split(":", 2))
        return pair in (self.direct_pairs if direct else self.pairs)

    @property
    def fraction(self) -> float:
        return len(self.node_ids) / self.reused if self.reused else 0.0


@dataclass
class Judgement:
    truth: set[str] = field(default_factory=set)
    caught: set[str] = field(default_factory=set)
    canary_only: set[str] = field(default_factory=set)  # caught only through a canary
    missed: set[str] = field(default_factory=set)


def judge(truth: set[str], selected: Selected) -> Judgement:
    caught = {k for k in truth if selected.has(k)}
    direct = {k for k in caught if selected.has(k, direct=True)}
    return Judgement(set(truth), caught, caught - direct, truth - caught)


def is_single_op(truth: set[str]) -> bool:
    """Every truth item belongs to one entry (any dtypes)."""
    ops = {key.split(":")[2] for key in truth if key.startswith("pair:")}
    return len(ops) == 1 and all(k.startswith("pair:") for k in truth)


def truth_of(
    mutation: Mutation,
    in_scope: Sequence[Pair],
    reused: Sequence[Instance],
    facts: OpFacts,
    executed: set[Pair] | None = None,
) -> set[str]:
    """Truth items of a mutation: executed changes (given) or declared."""
    if mutation.truth.mode == EXECUTION:
        return {pair_key(p) for p in executed or set()}
    if mutation.truth.mode == NONE:
        return set()
    return declared_truth(mutation.truth, in_scope, reused, facts)

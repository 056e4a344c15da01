"""Ground truth and judging: which pairs a mutation runs, what counts as changed (never an
unstable pair), what a declared truth holds, and how a selection is scored; the table adds
the figures up per kind."""

from __future__ import annotations

from pathlib import Path

from mutations.model import DECORATION, ENTRIES, OPS, TruthSpec
from mutations.table import figures, markdown, misses
from mutations.truth import (
    Digest,
    Instance,
    OpFacts,
    Selected,
    declared_truth,
    execution_truth,
    forward_only,
    is_single_op,
    isolated_check,
    joint_graph_suspects,
    judge,
    pair_key,
    pair_paths,
    plan_run,
    unstable_pairs,
)

SCOPE = [("opinfo", f"op{i}", dtype) for i in range(20) for dtype in ("float16", "float32")]


def test_the_run_puts_disagreements_first_and_keeps_to_the_cap() -> None:
    executed = {SCOPE[0], SCOPE[1], SCOPE[2]}
    selected = {"map": {SCOPE[0], SCOPE[1], SCOPE[2]}, "static": {SCOPE[0], SCOPE[5]}}
    plan = plan_run(executed, selected, SCOPE, cap=5, controls=2, seed="s")
    assert len(plan.pairs) == 5
    assert {SCOPE[1], SCOPE[2], SCOPE[5]} <= set(plan.pairs)  # executed xor selected
    controls = set(plan.pairs) - executed - {SCOPE[5]}
    assert len(controls) == 2 and not controls & {SCOPE[0]}
    assert plan.population == 4
    assert plan_run(executed, selected, SCOPE, cap=5, controls=2, seed="s") == plan


def test_code_every_pair_may_depend_on_samples_the_whole_scope() -> None:
    selected = {"static": {SCOPE[3]}}
    plan = plan_run(None, selected, SCOPE, cap=6, controls=2, seed="t")
    assert SCOPE[3] in plan.pairs and len(plan.pairs) == 6
    assert plan.population == len(SCOPE)
    assert "every in-scope pair" in plan.basis


def test_unstable_pairs_are_never_truth() -> None:
    a, b, c = SCOPE[:3]
    first = {a: Digest("ok", "1"), b: Digest("ok", "2"), c: Digest("unstable", "3")}
    second = {a: Digest("ok", "1"), b: Digest("ok", "9"), c: Digest("ok", "3")}
    unstable = unstable_pairs(first, second)
    assert unstable == {b, c}
    after = {a: Digest("ok", "changed"), b: Digest("ok", "x"), c: Digest("ok", "y")}
    assert execution_truth(first, after, unstable).truth == {a}
    assert execution_truth(first, {a: Digest("TypeError: boom", "e")}, set()).truth == {a}


def _digest(**paths: str) -> Digest:
    return Digest("ok", "".join(f"{k}={v}" for k, v in sorted(paths.items())), paths)


def test_a_change_only_where_compiled_is_truth_only_for_pairs_an_in_scope_instance_traces() -> None:
    traced, eager_only, both = SCOPE[:3]
    before = {p: _digest(eager="1", compile="2", compile_backward="3") for p in SCOPE[:3]}
    after = {
        traced: _digest(eager="1", compile="changed", compile_backward="3"),
        eager_only: _digest(eager="1", compile="2", compile_backward="changed"),
        both: _digest(eager="changed", compile="changed", compile_backward="3"),
    }
    runs = pair_paths([_inst(traced, traces=True), _inst(eager_only), _inst(both)])
    changes = execution_truth(before, after, set(), runs)
    assert changes.truth == {traced, both}  # an eager change counts wherever it is
    assert changes.unreached == {eager_only}
    # without per-path digests (or a status change) the whole digest decides
    whole = execution_truth({eager_only: Digest("ok", "1")}, {eager_only: Digest("ok", "2")},
                            set(), runs={})  # fmt: skip
    assert whole.truth == {eager_only}
    failed = {eager_only: Digest("error: boom", "", {"compile": "x"})}
    assert execution_truth(before, failed, set(), runs={}).truth == {eager_only}


def _inst(pair: tuple[str, str, str], traces: bool = False, gradients: bool = True) -> Instance:
    return Instance(f"id-{pair}-{traces}-{gradients}", pair, "TestX", "test_x", traces, gradients)


def test_a_compiled_backward_change_needs_a_test_that_traces_and_computes_gradients() -> None:
    """`compile_backward` runs only in a test that traces its op and takes gradients: a
    pair whose tests do one or the other cannot show it; `backward` needs gradients only."""
    fake_only, crossref, grads = SCOPE[:3]
    before = {p: _digest(eager="1", backward="2", compile_backward="3") for p in SCOPE[:3]}
    after = {p: _digest(eager="1", backward="2", compile_backward="changed") for p in SCOPE[:3]}
    runs = pair_paths(
        [
            _inst(fake_only, traces=True, gradients=False),  # test_fake: no gradients
            _inst(fake_only, traces=False, gradients=True),  # eager gradients: no tracing
            _inst(crossref, traces=True, gradients=True),
            _inst(grads, traces=False, gradients=True),
        ]
    )
    assert runs[fake_only] == {"compile", "backward"}
    changes = execution_truth(before, after, set(), runs)
    assert (changes.truth, changes.unreached) == ({crossref}, {fake_only, grads})
    eager_backward = {p: _digest(eager="1", backward="changed", compile_backward="3")
                      for p in SCOPE[:3]}  # fmt: skip
    changes = execution_truth(before, eager_backward, set(), runs)
    assert changes.truth == {fake_only, crossref, grads}


def test_a_pair_that_changed_only_beside_other_pairs_is_found_by_running_it_alone() -> None:
    order_effect, real = SCOPE[:2]
    before = {order_effect: Digest("ok", "1"), real: Digest("ok", "2")}
    alone = {order_effect: Digest("ok", "1"), real: Digest("ok", "changed")}
    assert isolated_check({order_effect, real}, before, alone) == {order_effect}
    assert isolated_check({order_effect}, before, {}) == set()  # not run alone: kept as truth


FACTS = OpFacts(
    aten_names={
        "add": frozenset({"add"}),
        "_refs.add": frozenset({"add"}),
        "hardtanh": frozenset({"hardtanh", "hardtanh_backward"}),
    },
    backward=frozenset({("opinfo", "hardtanh", "float32")}),
)
PAIRS = [
    ("opinfo", "add", "float16"),
    ("opinfo", "_refs.add", "float16"),
    ("opinfo", "hardtanh", "float16"),
    ("opinfo", "hardtanh", "float32"),
]


def test_a_yaml_entry_is_the_truth_of_its_own_op_and_in_place_form() -> None:
    spec = TruthSpec(OPS, ops=("add_",))
    assert declared_truth(spec, PAIRS, [], FACTS) == {pair_key(PAIRS[0]), pair_key(PAIRS[1])}
    formula = TruthSpec(OPS, ops=("hardtanh_backward",), backward_only=True)
    assert declared_truth(formula, PAIRS, [], FACTS) == {pair_key(PAIRS[3])}


def test_an_entry_and_a_decoration_are_the_truth_of_what_they_name() -> None:
    assert declared_truth(TruthSpec(ENTRIES, entries=("hardtanh",)), PAIRS, [], FACTS) == {
        pair_key(PAIRS[2]),
        pair_key(PAIRS[3]),
    }
    reused = [
        Instance("a", ("opinfo", "hardtanh", "float16"), "TestCommon", "test_out"),
        Instance("b", ("opinfo", "hardtanh", "float32"), "TestCommon", "test_out"),
        Instance("c", ("opinfo", "hardtanh", "float16"), "TestCommon", "test_noncontiguous"),
    ]
    spec = TruthSpec(
        DECORATION, entries=("hardtanh",), test_class="TestCommon", test_name="test_out",
        dtypes=("float16",),
    )  # fmt: skip
    assert declared_truth(spec, PAIRS, reused, FACTS) == {"instance:a"}


def test_a_judgement_counts_canary_hits_apart() -> None:
    truth = {pair_key(PAIRS[0]), pair_key(PAIRS[2]), "instance:c"}
    selected = Selected(
        node_ids=frozenset({"c", "x"}),
        pairs=frozenset({PAIRS[0], PAIRS[2]}),
        direct_pairs=frozenset({PAIRS[0]}),
        reused=100,
    )
    verdict = judge(truth, selected)
    assert verdict.caught == truth and not verdict.missed
    assert verdict.canary_only == {pair_key(PAIRS[2])}
    assert selected.fraction == 0.02
    assert judge({pair_key(PAIRS[3])}, selected).missed == {pair_key(PAIRS[3])}
    assert is_single_op({pair_key(PAIRS[2]), pair_key(PAIRS[3])})
    assert not is_single_op({pair_key(PAIRS[0]), pair_key(PAIRS[2])})


def _result(
    id_: str, kind: str, truth: list[str], caught: list[str], selected: int, expect: str = "select"
) -> dict[str, object]:
    run = {
        "selected": selected,
        "fraction": selected / 1000,
        "caught": caught,
        "missed": sorted(set(truth) - set(caught)),
        "canary_only": [],
        "no_effect_total": 0 if selected else 1,
        "cpu_seconds": 2.0,
        "single_op": len(truth) == 1,
    }
    return {
        "id": id_,
        "kind": kind,
        "expect": expect,
        "truth": truth,
        "summary": f"{id_} edit",
        "modes": {"map": run, "static": run},
    }


def test_the_table_adds_up_per_kind() -> None:
    results = [
        _result(
            "decomposition-01",
            "decomposition",
            ["pair:opinfo:a:float16"],
            ["pair:opinfo:a:float16"],
            10,
        ),
        _result(
            "decomposition-02",
            "decomposition",
            ["pair:opinfo:b:float16", "pair:opinfo:c:float16"],
            ["pair:opinfo:b:float16"],
            30,
        ),
        _result("behaviour-free-01", "behaviour-free", [], [], 0, expect="nothing"),
    ]
    decompositions = figures(results[:2], "map")
    assert (decompositions.truth_items, decompositions.caught_items) == (3, 2)
    assert decompositions.missed == ("decomposition-02",)
    assert abs(decompositions.fraction_mean - 0.02) < 1e-9 and decompositions.fraction_max == 0.03
    assert figures(results[2:], "map").quiet == 1
    table = markdown(results, [("map", "recorded map"), ("static", "--deps none")])
    rows = table.splitlines()
    assert rows[0].startswith("| kind | mutations | with truth | recorded map: caught")
    assert (
        "| decomposition | 2 | 2 | 66.7 % (2/3) | decomposition-02 | 2.00 / 3.00 % | 2.0 |" in table
    )
    assert "nothing selected, with reason: 1/1" in table
    assert misses(results, "map") == [
        "decomposition-02 decomposition-02 edit: missed opinfo:c:float16"
    ]


def test_a_mutation_that_breaks_torch_itself_changes_every_pair_it_runs(tmp_path: Path) -> None:
    """A mutated `torch/_decomp/__init__.py` that fails at import fails every pair: that is
    the mutation's truth, not an error of the benchmark (a full run once stopped on it)."""
    from mutation_runs import TruthRunner

    runner = TruthRunner(tmp_path / "scratch", tmp_path / "cache")
    path = "torch/_decomp/__init__.py"
    original = (runner.root / path).read_text(encoding="utf-8")
    pairs = [("opinfo", "add", "float32")]
    after, _ = runner.after(path, original + "\nraise AssertionError('mutated')\n", pairs)
    assert list(after) == pairs
    assert after[pairs[0]].status.startswith("error: the mutated torch failed: ")
    assert "AssertionError: mutated" in after[pairs[0]].status
    assert (runner.root / path).read_text(encoding="utf-8") == original  # restored


def test_a_change_a_forward_only_compile_does_not_see_needs_a_test_tracing_with_gradients() -> None:
    """Suspects: OpInfo pairs changed only where compiled whose tests trace but none with
    gradients; those whose forward-only compile is unchanged leave the truth."""
    joint, forward, eager, graded = SCOPE[:4]
    before = {p: _digest(eager="1", compile="2", compile_backward="3") for p in SCOPE[:4]}
    after = {
        joint: _digest(eager="1", compile="changed", compile_backward="3"),
        forward: _digest(eager="1", compile="changed", compile_backward="3"),
        eager: _digest(eager="changed", compile="changed", compile_backward="3"),
        graded: _digest(eager="1", compile="changed", compile_backward="3"),
    }
    runs = pair_paths(
        [
            _inst(joint, traces=True, gradients=False),
            _inst(forward, traces=True, gradients=False),
            _inst(eager, traces=True, gradients=False),
            _inst(graded, traces=True, gradients=True),
        ]
    )
    changes = execution_truth(before, after, set(), runs)
    suspects = joint_graph_suspects(changes, before, after, runs, backward=set(SCOPE))
    assert suspects == {joint, forward}  # not an eager change, not one a gradient trace sees
    # a pair without a backward compiled no gradients: its change is no joint graph's
    assert joint_graph_suspects(changes, before, after, runs, backward={forward}) == {forward}

    def probe(digest: str, steps: int = 2, errors: int = 0, status: str = "ok") -> Digest:
        found = _digest(compile_forward=digest)
        return Digest(status, found.digest, found.paths, steps, errors)

    forward_before = {joint: probe("a"), forward: probe("a")}
    forward_after = {joint: probe("a"), forward: probe("b")}
    assert forward_only(suspects, forward_before, forward_after) == {joint}
    assert forward_only(suspects, {}, {}) == set()  # the probe failed: all stay truth
    # a probe that saw nothing is no evidence: it ran no step, its steps raised, it failed
    for inconclusive in (probe("a", steps=0), probe("a", errors=1), probe("a", status="error: x")):
        same = {joint: inconclusive}
        assert forward_only({joint}, same, same) == set()
    assert (
        forward_only({joint}, {joint: _digest(compile="a")}, {joint: _digest(compile="a")}) == set()
    )

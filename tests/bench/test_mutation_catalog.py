"""The mutation catalog over upstream-shaped sources: every kind gets its mutations,
deterministically from the seed, each a patch `git apply` takes onto the release's files;
semantic ones change the code, behaviour-free ones do not, other-device ones touch only
another device's code; the truth each one is judged by fits what it changed."""

from __future__ import annotations

from pathlib import Path

import git
import pytest
from mutations.catalog import KINDS, all_sites, generate, mutated_text
from mutations.edits import unified_patch
from mutations.model import DECORATION, ENTRIES, EXECUTION, NONE, OPS, Mutation, Site
from mutations.operators import code_differs

from tests.bench.upstream_sources import SOURCES

PLENTY = dict.fromkeys(KINDS, 50)


def _by_kind(mutations: list[Mutation]) -> dict[str, list[Mutation]]:
    found: dict[str, list[Mutation]] = {}
    for mutation in mutations:
        found.setdefault(mutation.kind, []).append(mutation)
    return found


def test_the_same_seed_gives_the_same_mutations_and_another_seed_others() -> None:
    first = generate(SOURCES, PLENTY, seed=3)
    assert generate(SOURCES, PLENTY, seed=3) == first
    others = [generate(SOURCES, PLENTY, seed=s) for s in range(4, 9)]
    assert any(o != first for o in others)


def test_every_kind_is_mutated_and_each_patch_applies_onto_the_release(tmp_path: Path) -> None:
    mutations = generate(SOURCES, PLENTY, seed=0)
    assert set(_by_kind(mutations)) == set(KINDS)
    repo = git.Repo.init(tmp_path / "mirror")
    for path, text in SOURCES.items():
        (tmp_path / "mirror" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "mirror" / path).write_text(text)
    repo.index.add(list(SOURCES))
    release = repo.index.commit("torch 2.13.0")
    for mutation in mutations:
        new = mutated_text(mutation, SOURCES)
        patch = tmp_path / f"{mutation.id}.patch"
        patch.write_text(unified_patch(mutation.path, SOURCES[mutation.path], new))
        repo.git.apply("--cached", str(patch))
        assert repo.git.show(f":{mutation.path}") + "\n" == new.rstrip("\n") + "\n"
        repo.git.reset(release.hexsha)


def test_semantic_mutations_change_the_code_and_behaviour_free_ones_do_not() -> None:
    for mutation in generate(SOURCES, PLENTY, seed=1):
        if not mutation.path.endswith(".py"):
            continue
        changed = code_differs(SOURCES[mutation.path], mutated_text(mutation, SOURCES))
        if mutation.kind == "behaviour-free" and mutation.group in ("docstring", "comment"):
            assert not changed, mutation
        elif mutation.kind != "behaviour-free":
            assert changed, mutation


def test_a_kinds_count_is_kept_and_forced_functions_come_first() -> None:
    mutations = generate(SOURCES, {"nn-functional": 1, "decomposition": 2}, seed=0)
    kinds = _by_kind(mutations)
    assert len(kinds["decomposition"]) == 2 and set(kinds) == {"nn-functional", "decomposition"}
    [first] = kinds["nn-functional"]
    assert first.symbol in ("hardtanh", "_canonical_mask")


def test_strata_share_the_count_reached_and_unreached() -> None:
    def reached(site: Site) -> bool | None:
        return site.symbol in ("gelu", "hardtanh_backward")

    mutations = generate(SOURCES, {"decomposition": 2}, seed=0, reached=reached)
    assert {m.reached for m in mutations} == {True, False}


def test_truth_fits_what_was_mutated() -> None:
    kinds = _by_kind(generate(SOURCES, PLENTY, seed=0))
    assert {m.truth.mode for m in kinds["decomposition"]} == {EXECUTION}
    samples = {m.group: m.truth for m in kinds["sample-inputs"]}
    assert samples["samples"].mode == EXECUTION
    assert samples["error-inputs"].mode == ENTRIES and samples["error-inputs"].entries == ("abs",)
    assert samples["reference"].entries == ("abs",)
    fields = {
        (site.group, change.description): site.truth
        for site in all_sites(SOURCES)
        if site.kind == "opinfo-field"
        for change in site.changes()
    }
    out = fields[("toggle", "supports_out=True -> False")]
    assert out.mode == ENTRIES and out.entries == ("abs", "_refs.abs")  # _refs.abs_out overrides it
    forward = fields[("toggle", "supports_forward_ad=True -> False")]
    assert forward.entries == ("abs",)  # a PythonRefInfo never inherits autograd fields
    skip = next(t for (g, _), t in fields.items() if g == "decoration")
    assert (skip.mode, skip.test_class, skip.test_name, skip.dtypes) == (
        DECORATION,
        "TestCommon",
        "test_out",
        ("float16",),
    )
    derivative = kinds["derivatives-yaml"][0].truth
    assert derivative.mode == OPS and derivative.backward_only
    assert {m.truth.ops for m in kinds["native-yaml"]} <= {("add",), ("hardtanh",)}


@pytest.mark.parametrize(
    "group", ["branch", "decorate-other", "decorate-cpu-meta", "yaml-dispatch"]
)
def test_other_device_mutations_touch_only_another_devices_code(group: str) -> None:
    found = [m for m in generate(SOURCES, PLENTY, seed=0) if m.kind == "other-device"]
    mutation = next(m for m in found if m.group == group)
    assert mutation.expect == "nothing"
    changed = mutated_text(mutation, SOURCES).splitlines()
    original = SOURCES[mutation.path].splitlines()
    touched = [old for old, new in zip(original, changed, strict=False) if old != new] or original[
        mutation.line - 1 : mutation.line
    ]
    text = "\n".join(touched)
    if group == "branch":
        assert mutation.truth.mode == EXECUTION
        assert "a * 2" in text or "a + 1" in text  # inside `if a.is_cuda:` / `== "cuda"`
    else:
        assert mutation.truth.mode == NONE
        assert any(word in text for word in ("cuda", "cpu", "MPS", "CUDA")), text


def test_value_branch_mutations_edit_inside_a_branch_a_parameters_value_decides() -> None:
    """`_canonical_mask`'s `if mask is not None:` body; `broadcast_shapes`' `isinstance`
    asks of a loop variable, not a parameter, and gives no site."""
    sites = [s for s in all_sites(SOURCES) if s.kind == "value-branch"]
    assert {(s.symbol, s.group) for s in sites} == {("_canonical_mask", "none-test")}
    branch = range(
        SOURCES[sites[0].path].splitlines().index("    if mask is not None:") + 2,
        SOURCES[sites[0].path].splitlines().index("    return mask") + 1,
    )
    changes = sites[0].changes()
    assert changes and all(c.line in branch for c in changes)
    [mutation] = generate(SOURCES, {"value-branch": 1}, seed=0)
    assert mutation.truth.mode == EXECUTION and mutation.expect == "select"

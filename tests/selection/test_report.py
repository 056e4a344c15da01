"""report.md / report.html: every count adds up and nothing is cut without saying so."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from selection.outputs.report import render_html, render_markdown
from tests.support.select_cli import range_args, run_select
from tests.support.upstream_repo import INTERNAL, UpstreamRepo


@pytest.fixture(scope="module")
def doc(upstream: UpstreamRepo, manifest: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("report")
    head = upstream.change(
        f"{INTERNAL}/common_device_type.py",
        'setattr(cls, name + "_" + cls.device_type, test)',
        'setattr(cls, f"{name}_{cls.device_type}", test)',
    )
    run_select(range_args(upstream, head, manifest, tmp / "out"), tmp / "cache")
    return json.loads((tmp / "out" / "selection.json").read_text())


def _wide(doc: dict[str, Any]) -> dict[str, Any]:
    """75 templates selected; 8,452 drops over 3 op filters plus 4 distinct upstream skips and
    more reasons than the table shows; one manifest; no change without effect."""
    wide = json.loads(json.dumps(doc))
    base = wide["selected"][0]
    wide["selected"] = [
        {**base, "id": f"t::C::test_{i}_spyre", "template": f"test_{i}", "class": "TestCommon"}
        for i in range(75)
        for _ in range(2 if i < 5 else 1)
    ]
    ops = [f"op{i}" for i in range(300)]
    wide["dropped"] = (
        [
            {
                "id": f"x{n}",
                "stage": "scope",
                "reason": f"manifest: op {ops[n % 300]} out <- not in global.supported_ops (listed, but its op/module/dtype is filtered out)",
            }
            for n in range(8000)
        ]
        + [
            {
                "id": f"d{n}",
                "stage": "scope",
                "reason": f"manifest: dtype float64 out <- rule{n % 12}",
            }
            for n in range(452)
        ]
        + [
            {"id": f"u{n}", "stage": "scope", "reason": f"upstream skips it: DecorateInfo {n}"}
            for n in range(4)
        ]
    )
    wide["summary"]["dropped"] = len(wide["dropped"])
    wide["manifests"] = ["/m.yaml"]
    wide["no_effect"], wide["no_effect_total"] = [], 0
    return wide


def test_the_dropped_table_adds_up_to_the_header(doc: dict[str, Any]) -> None:
    wide = _wide(doc)
    md = render_markdown(wide)
    section = md.split("## Dropped candidates (8456)")[1].split("##")[0]
    counts = [int(n) for n in re.findall("^- (\\d+) \u00d7", section, re.M)]
    assert sum(counts) == 8456
    # one row per rule, not per op: the 8,000 op drops are one row
    assert "- 8000 \u00d7 manifest: op <op> out <- not in global.supported_ops" in section
    assert "other reasons (selection.json `dropped`)" in section
    html = render_html(wide)
    table = html.split("Dropped candidates")[1].split("</table>")[0]
    assert sum(int(n) for n in re.findall(r'<td class="n">(\d+)</td>', table)) == 8456


def test_where_the_selection_goes_says_how_much_is_not_shown(doc: dict[str, Any]) -> None:
    wide = _wide(doc)
    md = render_markdown(wide)
    assert "## Where the selection goes" in md
    assert "…and 60 more templates (60 tests) in selection.json `selected`." in md
    assert "…and 60 more templates (60 tests) in selection.json." in render_html(wide)


def test_html_wording_and_contrast(doc: dict[str, Any]) -> None:
    wide = _wide(doc)
    html = render_html(wide)
    assert "show the first 0" not in html and "1 files" not in html
    assert "1 file</td>" in html
    bar = re.search(r"\.bar span \{[^}]*background: (#[0-9a-f]{6})", html)
    assert bar is not None and _luminance(bar.group(1)) > 0.5  # dark text on a light bar


def _luminance(color: str) -> float:
    r, g, b = (int(color[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_a_share_too_small_for_one_decimal_is_shown_as_such_in_reports_and_console() -> None:
    from selection.cli import percent
    from selection.outputs.report import share

    assert share(9 / 27_933) == percent(9, 27_933) == "< 0.1 %"
    assert (share(0.0), share(0.75), percent(3, 4)) == ("0.0 %", "75.0 %", "75.0 %")


def test_a_group_summary_names_the_subject_of_its_first_hop() -> None:
    """`matmul calls cuBLASModule` is said with its file (not `calls cuBLASModule` beside an
    OpInfo that does not call it); an entry's own hop needs no subject."""
    from selection.links.base import Link, Step, Target
    from selection.mapping import map_cause

    change = Step("torch/backends/cuda/__init__.py", "cuBLASModule.__getattr__", "modified")
    hop = Step("torch/backends/cuda/__init__.py", "matmul", "calls cuBLASModule (line 715)")
    entry = Step("db.py", "OpInfo('to_sparse')", "passes matmul (line 9)")
    root = Target.entry("opinfo", "to_sparse")
    cause = map_cause("library", Link(root, (change, hop, entry), kinds=("call", "call")))
    assert cause.summary == (
        "OpInfo 'to_sparse' (2 links: torch/backends/cuda/__init__.py:matmul calls "
        "cuBLASModule (line 715))"
    )
    direct = map_cause("library", Link(root, (change, entry), kinds=("call",)))
    assert direct.summary == "OpInfo 'to_sparse' (1 link: passes matmul (line 9))"
    # a hop whose name is part of the root's is still named (`matmul` under test_matmul_small)
    template = Target.template("test/test_linalg.py", "TestLinalg", "test_matmul_small")
    body = Step("test/test_linalg.py", "TestLinalg.test_matmul_small", "calls matmul (line 3)")
    via = map_cause("library", Link(template, (change, hop, body), kinds=("call", "call")))
    assert "(2 links: torch/backends/cuda/__init__.py:matmul calls cuBLASModule" in via.summary
    own = map_cause("library", Link(template, (change, body), kinds=("template",)))
    assert own.summary == "template TestLinalg.test_matmul_small (1 link: calls matmul (line 3))"


def test_changed_symbols_blind_spots_are_grouped_by_reason_after_the_runs_own() -> None:
    from selection.outputs.blind_spots import change_spot_groups, run_spots

    spots = [
        "release wheels hold no C++: changes to kernels cannot be seen",
        "torch/_dynamo/a.py: f modified: inside torch/_dynamo, linked only by the recording",
        "torch/_dynamo/b.py: C.g added: inside torch/_dynamo, linked only by the recording",
        "torch/x.py: h removed: linked to no reused test statically",
    ]
    assert run_spots(spots) == [spots[0]]
    groups = change_spot_groups(spots)
    assert [(g.reason, g.changes) for g in groups] == [
        (
            "inside torch/_dynamo, linked only by the recording",
            ["torch/_dynamo/a.py: f modified", "torch/_dynamo/b.py: C.g added"],
        ),
        ("linked to no reused test statically", ["torch/x.py: h removed"]),
    ]


def test_the_report_says_what_mode_rank_and_estimated_mean(doc: dict[str, Any]) -> None:
    """A newcomer reads `mandatory_success, rank 0.9` beside each first test: both reports
    say what the words mean, and the HTML one what its `estimated` tag means."""
    md, html = render_markdown(doc), render_html(doc)
    for text in (md, html):
        first = text.split("First tests to run")[1]
        assert "must pass" in first and "how likely the change is to break the test" in first
    assert "parametrization is assumed" in html.split("First tests to run")[1]
    # the stages' counts: `templates` is what changed under detect, what is known under map
    for text in (" ".join(md.split()), html):
        assert "detect counts what changed" in text and "map counts what it worked on" in text
    # templates and dtypes are two tables, each summing to the selection
    goes = html.split("Where the selection goes")[1].split("<h2>")[0]
    assert goes.count("<table>") == 2


def test_a_first_tests_why_names_the_change_then_how_it_reaches_the_test() -> None:
    """No dangling arrow, and no second cause that only repeats the change."""
    from selection.outputs.report import why

    entry = [
        {"stage": "detect", "summary": "OpInfo 'max_pool2d' modified: check_grad removed"},
        {"stage": "map", "summary": "OpInfo 'max_pool2d': check_grad removed"},
        {"stage": "triage", "summary": "deterministic: the op's entry changed"},
    ]
    assert why(entry) == "OpInfo 'max_pool2d' modified: check_grad removed"
    library = [
        {"stage": "detect", "summary": "torch/_refs/__init__.py: _normalize modified"},
        {"stage": "map", "summary": "OpInfo 'layer_norm' (3 links: ...)"},
        {"stage": "scope", "summary": "reused as mandatory_success"},
    ]
    assert why(library) == (
        "torch/_refs/__init__.py: _normalize modified → OpInfo 'layer_norm' (3 links: ...)"
    )

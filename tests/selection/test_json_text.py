"""selection.json is laid out for people: one member per line at the outer levels, each
test on one line, and the same JSON as any encoder would write."""

from __future__ import annotations

import json

import pytest

from selection.outputs.json_text import readable

DOC = {
    "schema": "spyre-ci/selection",
    "base": {"label": "2.13", "sha": None},
    "selected": [
        {"id": "test/test_ops.py::TestCommonSPYRE::test_x_abs_spyre_float32", "causes": [{"k": 1}]},
        {"id": "test/test_ops.py::TestCommonSPYRE::test_x_add_spyre_float32", "causes": []},
    ],
    "dropped": [],
    "evidence": {},
    "note": 'ünïcode "quoted"',
}


def test_the_text_is_the_same_json() -> None:
    assert json.loads(readable(DOC)) == DOC
    assert json.loads(readable(DOC, depth=0)) == DOC
    assert json.loads(readable(DOC, depth=5)) == DOC


def test_each_selected_test_is_one_line_and_the_header_one_field_per_line() -> None:
    lines = readable(DOC).splitlines()
    assert ' "schema": "spyre-ci/selection",' in lines
    assert '  "label": "2.13",' in lines
    tests = [line for line in lines if '"id": "test/test_ops.py' in line]
    assert len(tests) == 2
    assert all(json.loads(line.strip().rstrip(",")) in DOC["selected"] for line in tests)
    assert ' "dropped": [],' in lines


def test_sorted_keys_at_every_level_and_tuples_laid_out_as_lists() -> None:
    doc = {"b": [{"z": 1, "a": 2}], "a": (1, 2)}
    text = readable(doc, sort_keys=True)
    assert text == '{\n "a": [\n  1,\n  2\n ],\n "b": [\n  {"a": 2, "z": 1}\n ]\n}'
    assert json.loads(text) == {"a": [1, 2], "b": [{"a": 2, "z": 1}]}


def test_a_laid_out_key_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(TypeError, match="keys must be str"):
        readable({True: 1})

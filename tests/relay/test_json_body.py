"""relay/json_body.py: what a JSON body must be for the relay to take it (pure)."""

from __future__ import annotations

import json

import pytest

from relay.json_body import BadBody, bounded_int, parse_json_body, storable_text


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": "\\ud83d\\ude00"}',  # a surrogate pair: one emoji
        '{"a": "\U0001f600 é"}'.encode(),
        b'{"a": "\\\\ud800"}',  # an escaped backslash, then text: no surrogate at all
        b'{"a": "\\u0000\\u001b"}',  # control characters inside the JSON: fine as data
        json.dumps({"a": [[[[[1]]]]], "b": 2**70}).encode(),
    ],
)
def test_valid_json_in_utf8_is_taken(raw: bytes) -> None:
    text, data = parse_json_body(raw)
    assert text == raw.decode() and isinstance(data, dict)


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ('{"a": 1}'.encode("utf-16"), "NUL bytes"),
        (b"\xef\xbb\xbf{}", "byte order mark"),
        (b'{"a": "\xe9"}', "not UTF-8 (byte 7)"),
        (b'{"a": "\xed\xa0\x80"}', "not UTF-8"),  # a surrogate encoded in UTF-8 (CESU)
        (b'{"a": NaN}', "NaN is not a JSON value"),
        (b'{"a": -Infinity}', "-Infinity"),
        (b'{"a": ' + b"9" * 5000 + b"}", "not JSON"),
        (b'{"a": {"b": "\\ud800"}}', "a.b: contains a lone UTF-16 surrogate"),
        (b'{"a": ["\\udc00"]}', "a[0]: contains a lone"),
        (b'{"a": "\\\\\\ud800"}', "a: contains a lone"),  # backslash, then a real escape
        (b'{"\\ud800": 1}', "<key>"),
        (b'{"a": "\\\\ud800\\udc00"}', "a: contains a lone"),  # text, then a lone low half
        (b'{"a": ' + b"[" * 65 + b"]" * 65 + b"}", "a" + "[0]" * 63 + ": JSON nested"),
        (b"[" * 100_000 + b"]" * 100_000, "nested more than 64 deep"),
    ],
)
def test_a_body_the_relay_cannot_take_is_refused_naming_the_fault(raw: bytes, named: str) -> None:
    with pytest.raises(BadBody) as refused:
        parse_json_body(raw)
    assert named in str(refused.value)


def test_text_and_numbers_for_columns() -> None:
    assert storable_text("pull_request", "action", max_chars=20) == "pull_request"
    with pytest.raises(BadBody, match=r"field head.sha contains a control character \(U\+0000\)"):
        storable_text("abc\x00", "head.sha", max_chars=100)
    with pytest.raises(BadBody, match=r"field x contains a control character \(U\+0085\)"):
        storable_text("a\x85", "x", max_chars=10)
    with pytest.raises(BadBody, match="longer than 3"):
        storable_text("abcd", "x", max_chars=3)
    assert bounded_int(2**63 - 1, "number") == 2**63 - 1
    with pytest.raises(BadBody, match="field number is out of range"):
        bounded_int(2**63, "number")

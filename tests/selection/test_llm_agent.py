"""The LLM triage agent against a fake OpenAI-compatible server over real HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from selection.agents.llm import LLMAgent, LLMConfig
from selection.model import Cause
from selection.state import Group
from tests.support.fake_openai import FakeOpenAI, decide_all
from tests.support.select_cli import range_args, run_select
from tests.support.upstream_repo import INTERNAL, UpstreamRepo


def groups(n: int = 3) -> list[Group]:
    return [
        Group(f"g{i}", Cause("triage", "entry", f"OpInfo 'op{i}' modified"), [f"t::C::test_{i}"])
        for i in range(n)
    ]


def agent(fake: FakeOpenAI, tmp_path: Path, **overrides: Any) -> LLMAgent:
    settings: dict[str, Any] = {"timeout": 5.0, "cache_dir": tmp_path / "llm", **overrides}
    config = LLMConfig(url=fake.url, model=fake.model, **settings)
    return LLMAgent(config)


def test_decisions_are_validated_batched_and_cached(tmp_path: Path) -> None:
    def decide(payload: list[dict[str, Any]]) -> str:
        return json.dumps(
            {
                "decisions": [
                    {
                        "group_id": g["group_id"],
                        "decision": "not_needed" if g["group_id"] == "g1" else "run",
                        "rationale": "only touches CUDA graphs"
                        if g["group_id"] == "g1"
                        else "numerics changed",
                        "confidence": 0.7,
                        "priority": 0.6,
                    }
                    for g in payload
                ]
            }
        )

    with FakeOpenAI(decide=decide, api_key="k") as fake:
        first = agent(fake, tmp_path, batch_size=2, api_key="k")
        verdicts = first.decide(groups(3))
        assert [len(json.loads(r["messages"][1]["content"])["groups"]) for r in fake.requests] == [
            2,
            1,
        ]
        assert (
            verdicts["g1"].decision == "not_needed"
            and verdicts["g1"].rationale == "only touches CUDA graphs"
        )
        assert verdicts["g0"].decision == "run" and verdicts["g0"].agent == "llm"
        assert first.tokens_used == 240
        again = agent(fake, tmp_path, batch_size=2, api_key="k")
        assert again.decide(groups(3))["g1"].decision == "not_needed"
        assert (len(fake.requests), again.cache_hits, again.requests_sent) == (2, 2, 0)


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("500", "answered HTTP 500"),
        ("not-json", "malformed agent answer"),
        ("no-choices", "not an OpenAI chat completion"),
        ("sleep", "timed out after 1 s"),
    ],
)
def test_any_failure_falls_back_to_run_with_the_reason(
    tmp_path: Path, fault: str, reason: str
) -> None:
    # A 1 s timeout only where the fake hangs (30 s, in a daemon thread that costs nothing);
    # elsewhere 10 s, so that a loaded machine's slow answer is not mistaken for a hang.
    timeout = 1.0 if fault == "sleep" else 10.0
    with FakeOpenAI(fault=fault, sleep_seconds=30) as fake:
        verdicts = agent(fake, tmp_path, timeout=timeout).decide(groups(2))
    assert {v.decision for v in verdicts.values()} == {"run"}
    assert all(reason in v.fallback_reason for v in verdicts.values())


def test_unknown_model_and_wrong_key_fall_back(tmp_path: Path) -> None:
    with FakeOpenAI(api_key="secret") as fake:
        no_key = agent(fake, tmp_path).decide(groups(1))["g0"]
        wrong_model = LLMAgent(
            LLMConfig(url=fake.url, model="other", api_key="secret", timeout=5)
        ).decide(groups(1))["g0"]
    assert "HTTP 401" in no_key.fallback_reason
    assert "HTTP 404" in wrong_model.fallback_reason and "not found" in wrong_model.fallback_reason


def test_invalid_field_values_and_missing_groups_fall_back(tmp_path: Path) -> None:
    def partial(payload: list[dict[str, Any]]) -> str:
        return json.dumps(
            {
                "decisions": [
                    {"group_id": "g0", "decision": "run", "rationale": "x", "confidence": 0.5},
                    {"group_id": "zz", "decision": "run", "rationale": "x", "confidence": 0.5},
                ]
            }
        )

    with FakeOpenAI(decide=partial) as fake:
        a = agent(fake, tmp_path)
        verdicts = a.decide(groups(2))
    assert verdicts["g0"].fallback_reason == ""
    assert verdicts["g1"].fallback_reason == "the agent gave no answer for this group"
    assert any("unknown group 'zz'" in n for n in a.notes)

    def out_of_range(payload: list[dict[str, Any]]) -> str:
        return json.dumps(
            {
                "decisions": [
                    {"group_id": "g0", "decision": "maybe", "rationale": "x", "confidence": 3}
                ]
            }
        )

    with FakeOpenAI(decide=out_of_range) as fake:
        verdict = agent(fake, tmp_path / "other").decide(groups(1))["g0"]
    assert verdict.decision == "run" and "decisions.0.decision" in verdict.fallback_reason


def test_token_budget_stops_requests(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        a = agent(fake, tmp_path, token_budget=10)
        verdicts = a.decide(groups(2))
        assert fake.requests == []
    assert all("token budget of 10 exhausted" in v.fallback_reason for v in verdicts.values())


def test_cli_llm_agent_drops_with_reason_in_selection_json(
    upstream: UpstreamRepo, manifest: Path, tmp_path: Path
) -> None:
    head = upstream.change(
        f"{INTERNAL}/common_methods_invocations.py",
        "torch.ones(4, device=device",
        "torch.ones(6, device=device",
    )

    not_needed = decide_all("not_needed", "sample size only", 0.55)
    with FakeOpenAI(decide=not_needed) as fake:
        code, _, stderr = run_select(
            [
                *range_args(upstream, head, manifest, tmp_path / "o"),
                "--agent",
                "llm",
                "--llm-url",
                fake.url,
                "--model",
                fake.model,
            ],
            tmp_path / "c",
        )
    assert code == 4, stderr
    doc = json.loads((tmp_path / "o" / "selection.json").read_text())
    assert doc["agent"]["name"] == "llm" and doc["selected"] == []
    agent_drops = [d for d in doc["dropped"] if d["stage"] == "triage"]
    assert sorted(d["id"].rsplit("::", 1)[1] for d in agent_drops) == [
        "test_out_mul_spyre_float16",
        "test_out_mul_spyre_float32",
    ]
    assert {d["reason"] for d in agent_drops} == {"llm: sample size only"}
    assert doc["groups"][0]["decision"] == "not_needed"


def test_llm_agent_needs_url_and_model(tmp_path: Path) -> None:
    code, _, stderr = run_select(["--from", "2.13", "--to", "2.14", "--agent", "llm"], tmp_path)
    assert code == 2
    assert "--agent llm needs --llm-url URL and --model NAME" in stderr


def test_a_closed_port_falls_back_naming_the_url_and_the_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    config = LLMConfig(url=url, model="m", timeout=5.0, cache_dir=tmp_path / "llm")
    reason = LLMAgent(config).decide(groups(1))["g0"].fallback_reason or ""
    assert f"request to {url}/chat/completions failed: ConnectionError: " in reason
    assert "Connection refused" in reason

"""An LLM triage agent behind an OpenAI-compatible endpoint (`/v1/chat/completions`).

Groups are sent in batches; each answer must be JSON matching `BatchAnswer` (validated by
pydantic). Answers are cached by the hash of (model, prompt); a token budget caps the
spend; every request has a timeout. Any error, timeout, budget exhaustion, malformed or
missing answer makes the affected groups fall back to "run" with the reason recorded.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import requests
from pydantic import BaseModel, Field, ValidationError

from selection.state import Group, Verdict

SYSTEM_PROMPT = (
    "You triage upstream PyTorch changes for an out-of-tree accelerator backend (device 'spyre', "
    "PrivateUse1). For each group of reused upstream tests that share one upstream cause, decide: "
    "'run' (the change can affect them), 'not_needed' (it cannot, e.g. it only concerns another "
    "device), or 'manifest_change' (the backend's test manifest must be updated). Answer with JSON "
    'only: {"decisions": [{"group_id": str, "decision": "run"|"not_needed"|"manifest_change", '
    '"rationale": one line, "confidence": 0..1, "priority": 0..1 (likelihood of failure)}]}.'
)


class GroupDecision(BaseModel):
    group_id: str
    decision: Literal["run", "not_needed", "manifest_change"]
    rationale: str = Field(min_length=1, max_length=400)
    confidence: float = Field(ge=0.0, le=1.0)
    priority: float = Field(default=0.5, ge=0.0, le=1.0)


class BatchAnswer(BaseModel):
    decisions: list[GroupDecision]


class LLMError(RuntimeError):
    """The endpoint failed or answered something unusable."""


@dataclass
class LLMConfig:
    url: str  # base URL, e.g. http://127.0.0.1:8000/v1
    model: str
    api_key: str | None = None
    timeout: float = 60.0
    token_budget: int = 200_000
    batch_size: int = 20
    cache_dir: Path | None = None
    max_examples: int = 5


def _group_payload(group: Group, max_examples: int) -> dict[str, object]:
    return {
        "group_id": group.group_id,
        "cause": group.cause.summary,
        "kind": group.cause.kind,
        "instances": len(group.node_ids),
        "templates": sorted(group.templates)[:10],
        "ops": sorted(group.ops)[:20],
        "dtypes": sorted(group.dtypes),
        "manifest_modes": sorted(group.modes),
        "templates_compute_gradients": "no" if group.gradient_free else "yes or not known",
        "change_only_on_failing_paths_templates_handle_errors": (
            "no" if group.error_free else "yes, not known, or not such a change"
        ),
        "examples": group.node_ids[:max_examples],
    }


@dataclass
class LLMAgent:
    config: LLMConfig
    name: str = "llm"
    tokens_used: int = 0
    requests_sent: int = 0
    cache_hits: int = 0
    notes: list[str] = field(default_factory=list)

    def decide(self, groups: list[Group]) -> dict[str, Verdict]:
        verdicts: dict[str, Verdict] = {}
        size = max(1, self.config.batch_size)
        for start in range(0, len(groups), size):
            batch = groups[start : start + size]
            verdicts.update(self._batch(batch))
        return verdicts

    def _batch(self, batch: list[Group]) -> dict[str, Verdict]:
        prompt = json.dumps(
            {"groups": [_group_payload(g, self.config.max_examples) for g in batch]}, sort_keys=True
        )
        try:
            answer = self._answer(prompt)
        except LLMError as exc:
            return {g.group_id: _fallback(str(exc)) for g in batch}
        verdicts: dict[str, Verdict] = {}
        wanted = {g.group_id for g in batch}
        for decision in answer.decisions:
            if decision.group_id not in wanted:
                self.notes.append(
                    f"agent answered for unknown group {decision.group_id!r}: ignored"
                )
                continue
            verdicts[decision.group_id] = Verdict(
                decision.decision,
                decision.rationale,
                decision.confidence,
                decision.priority,
                self.name,
            )
        for group_id in wanted - set(verdicts):
            verdicts[group_id] = _fallback("the agent gave no answer for this group")
        return verdicts

    def _answer(self, prompt: str) -> BatchAnswer:
        key = hashlib.sha256(f"{self.config.model}\0{SYSTEM_PROMPT}\0{prompt}".encode()).hexdigest()
        cached = self._cache_read(key)
        if cached is not None:
            self.cache_hits += 1
            return cached
        estimate = (len(SYSTEM_PROMPT) + len(prompt)) // 4 + 50 * self.config.batch_size
        if self.tokens_used + estimate > self.config.token_budget:
            raise LLMError(
                f"token budget of {self.config.token_budget} exhausted ({self.tokens_used} used)"
            )
        content, used = self._post(prompt)
        self.tokens_used += used or estimate
        try:
            answer = BatchAnswer.model_validate_json(_strip_fences(content))
        except ValidationError as exc:
            first = exc.errors()[0]
            raise LLMError(
                f"malformed agent answer: {'.'.join(map(str, first['loc']))}: {first['msg']}"
            ) from exc
        self._cache_write(key, answer)
        return answer

    def _post(self, prompt: str) -> tuple[str, int]:
        headers = {"Content-Type": "application/json"}
        api_key = self.config.api_key or os.environ.get("OPENAI_API_KEY")
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        body = {
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": prompt},
            ],
            "temperature": 0,
            "response_format": {"type": "json_object"},
        }
        url = self.config.url.rstrip("/") + "/chat/completions"
        self.requests_sent += 1
        try:
            response = requests.post(url, json=body, headers=headers, timeout=self.config.timeout)
        except requests.Timeout as exc:
            raise LLMError(f"timed out after {self.config.timeout:g} s ({url})") from exc
        except requests.RequestException as exc:
            detail = " ".join(str(exc).split())[:300]
            raise LLMError(f"request to {url} failed: {type(exc).__name__}: {detail}") from exc
        if response.status_code != 200:
            raise LLMError(f"{url} answered HTTP {response.status_code}: {response.text[:200]}")
        try:
            data = response.json()
            content = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMError("the endpoint's reply is not an OpenAI chat completion") from exc
        usage = data.get("usage") or {}
        return str(content), int(usage.get("total_tokens") or 0)

    def _cache_path(self, key: str) -> Path | None:
        return self.config.cache_dir / f"{key}.json" if self.config.cache_dir else None

    def _cache_read(self, key: str) -> BatchAnswer | None:
        path = self._cache_path(key)
        if path is None or not path.is_file():
            return None
        try:
            return BatchAnswer.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValidationError):
            return None  # a corrupt cache entry is ignored and rewritten

    def _cache_write(self, key: str, answer: BatchAnswer) -> None:
        path = self._cache_path(key)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(answer.model_dump_json(), encoding="utf-8")
        tmp.replace(path)


def _fallback(reason: str) -> Verdict:
    return Verdict("run", f"fallback to run: {reason}", 0.0, 0.5, "llm", fallback_reason=reason)


def _strip_fences(content: str) -> str:
    text = content.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text

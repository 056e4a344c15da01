"""The relay's configuration: a YAML file overlaid by environment variables.

`load_config(path)` reads the YAML file (if any), applies `SPYRE_RELAY_*`
variables (nested fields joined by `__`, e.g. `SPYRE_RELAY_GITHUB__TOKEN`,
lists comma-separated, e.g. `SPYRE_RELAY_WEBHOOK_SECRETS=new,old`), validates,
and raises `ConfigError` naming the file or variable and the field at fault.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from relay.config_sources import ENV_PREFIX, ConfigSources
from spyre_ci.yaml_positions import (
    Loc,
    Positions,
    YamlSyntaxError,
    format_loc,
    parse_yaml_positions,
)

CONFIG_PATH_VAR = "SPYRE_RELAY_CONFIG"
MIN_RETENTION_DAYS = 3.0  # GitHub's redelivery window and CRCR's TTL
_M = TypeVar("_M", bound=BaseModel)


class ConfigError(Exception):
    """The configuration is invalid; the message names the source and the field."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AllowlistConfig(_Model):
    """Where the allowlist comes from: a file path or an http(s) URL."""

    source: str = Field(description="path or URL of an allowlist.yml")
    min_refresh_seconds: float = Field(default=60.0, ge=1.0)


class GitHubConfig(_Model):
    """How the relay authenticates to GitHub's API: a GitHub App, or a token."""

    api_url: str = "https://api.github.com"
    token: SecretStr | None = None
    app_id: str | None = None
    private_key: SecretStr | None = None
    private_key_path: Path | None = None
    timeout_seconds: float = Field(default=10.0, gt=0)
    # GitHub's secondary limits: >= 1 s between content-creating requests, <= 80 per minute.
    min_write_interval_seconds: float = Field(default=1.0, ge=0)
    max_writes_per_minute: int = Field(default=80, ge=1)

    @model_validator(mode="after")
    def _one_auth(self) -> GitHubConfig:
        has_app = self.app_id is not None
        has_key = self.private_key is not None or self.private_key_path is not None
        if has_app != has_key:
            raise ValueError("a GitHub App needs both app_id and private_key (or private_key_path)")
        if has_app and self.token is not None:
            raise ValueError(
                "configure either a GitHub App (app_id + private_key) or a token, not both"
            )
        return self

    def private_key_pem(self) -> str | None:
        if self.private_key is not None:
            return self.private_key.get_secret_value()
        if self.private_key_path is not None:
            return self.private_key_path.read_text(encoding="utf-8")
        return None


class WorkerConfig(_Model):
    concurrency: int = Field(default=4, ge=1, le=100)  # GitHub allows <= 100 concurrent requests
    lease_seconds: float = Field(default=120.0, gt=0)
    poll_interval_seconds: float = Field(default=0.5, gt=0)
    # A failing job is retried at capped exponential backoff until it has been failing for
    # retry_window_seconds (a day: an outage of the HUD or of GitHub heals by itself), or,
    # when set, for max_attempts attempts; then it becomes a dead letter.
    max_attempts: int | None = Field(default=None, ge=1)
    retry_window_seconds: float = Field(default=24 * 3600.0, ge=0)
    backoff_base_seconds: float = Field(default=2.0, gt=0)
    backoff_max_seconds: float = Field(default=600.0, gt=0)
    prune_interval_seconds: float = Field(default=3600.0, gt=0)


class TargetConfig(_Model):
    """A downstream target that is not (only) an allowlisted GitHub repository,
    e.g. the built-in local target. `connection` names a registered dispatcher."""

    name: str
    connection: str
    level: Literal["L1", "L2", "L3", "L4"] = "L2"
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("connection")
    @classmethod
    def _known_connection(cls, connection: str) -> str:
        # At load, not at the first dispatch: a typo would otherwise retry forever.
        from relay.dispatch.dispatcher import DISPATCHER_FACTORIES

        if connection not in DISPATCHER_FACTORIES:
            known = ", ".join(sorted(DISPATCHER_FACTORIES))
            raise ValueError(f"unknown connection {connection!r} (known: {known})")
        return connection


class RelayConfig(_Model):
    upstream_repo: str = "pytorch/pytorch"
    webhook_secrets: list[SecretStr] = Field(min_length=1)
    store_url: str = "sqlite:///relay.db"
    sqlite_synchronous: Literal["FULL", "NORMAL"] = "FULL"
    # How long a write waits for the SQLite lock / a PostgreSQL connection before 503.
    store_timeout_seconds: float = Field(default=5.0, gt=0)
    allowlist: AllowlistConfig | None = None
    github: GitHubConfig = Field(default_factory=lambda: GitHubConfig())
    worker: WorkerConfig = Field(default_factory=lambda: WorkerConfig())
    targets: list[TargetConfig] = Field(default_factory=list)
    retention_days: float = Field(default=MIN_RETENTION_DAYS, ge=MIN_RETENTION_DAYS)
    max_body_bytes: int = Field(default=25 * 1024 * 1024, gt=0)
    public_url: str = "http://127.0.0.1:8080"
    extra: dict[str, Any] = Field(
        default_factory=dict, description="settings of modules added by other parts of the relay"
    )

    @field_validator("store_url")
    @classmethod
    def _known_store(cls, url: str) -> str:
        from relay.store import BadStoreURL, check_store_url

        try:
            check_store_url(url)
        except BadStoreURL as exc:  # at load: `relay status` would otherwise accept it
            raise ValueError(str(exc)) from None
        return url

    @model_validator(mode="after")
    def _check_repo(self) -> RelayConfig:
        if self.upstream_repo.count("/") != 1:
            raise ValueError(f"upstream_repo {self.upstream_repo!r} must be owner/repo")
        if any(not s.get_secret_value() for s in self.webhook_secrets):
            raise ValueError("webhook_secrets must not contain an empty secret")
        if self.worker.lease_seconds <= self.github.timeout_seconds:
            # A lease shorter than a request lets another worker take the job mid-request.
            raise ValueError(
                f"worker.lease_seconds ({self.worker.lease_seconds}) must exceed"
                f" github.timeout_seconds ({self.github.timeout_seconds})"
            )
        return self

    def secret_bytes(self) -> list[bytes]:
        return [s.get_secret_value().encode() for s in self.webhook_secrets]


def _env_overrides(environ: Mapping[str, str]) -> tuple[dict[str, Any], dict[Loc, str]]:
    """The settings the `SPYRE_RELAY_*` variables give, and which variable set each."""
    out: dict[str, Any] = {}
    variables: dict[Loc, str] = {}
    for key, value in environ.items():
        if not key.startswith(ENV_PREFIX) or key == CONFIG_PATH_VAR:
            continue
        path = key[len(ENV_PREFIX) :].lower().split("__")
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        leaf = path[-1]
        node[leaf] = (
            [v.strip() for v in value.split(",") if v.strip()]
            if leaf == "webhook_secrets"
            else value
        )
        variables[tuple(path)] = key
    return out, variables


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


# The sections of `extra:` and the model validating each ("module:Model", imported
# lazily). A part of the relay that reads `extra.<name>` registers it here.
EXTRA_SECTIONS: dict[str, str] = {
    "callbacks": "relay.callbacks.settings:CallbackSettings",
    "dashboard": "relay.dashboard.app:DashboardSettings",
    "results": "relay.results.settings:ResultsSettings",
}


def _import(qualified: str) -> Any:
    import importlib

    module_name, _, attr = qualified.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def check_extra(extra: Mapping[str, Any], sources: ConfigSources | None = None) -> None:
    """ConfigError (one line per problem, naming the key and where it was set) for an
    unknown `extra` section or an invalid field of a known one."""
    sources = sources or ConfigSources(data={"extra": extra})
    for name in extra:
        loc: Loc = ("extra", name)
        if name not in EXTRA_SECTIONS:
            known = ", ".join(sorted(EXTRA_SECTIONS))
            raise ConfigError(
                f"{sources.where(loc)}: extra.{name}: unknown section (known: {known})"
            )
        if extra[name] is not None and not isinstance(extra[name], Mapping):
            raise ConfigError(f"{sources.where(loc)}: extra.{name}: must be a mapping")
        extra_section(extra, name, _import(EXTRA_SECTIONS[name]), sources)


# The options model of each target connection that has options (module:attribute).
TARGET_OPTIONS: dict[str, str] = {"local": "relay.local_target:LocalTargetOptions"}


def check_target_options(targets: list[TargetConfig], sources: ConfigSources | None = None) -> None:
    """ConfigError (one line per problem, naming `targets[<name>].options.<field>`) for a
    target whose options its connection does not accept."""
    sources = sources or ConfigSources(data={"targets": [t.model_dump() for t in targets]})
    for index, target in enumerate(targets):
        if target.connection not in TARGET_OPTIONS:
            continue
        model = _import(TARGET_OPTIONS[target.connection])
        try:
            model.model_validate(target.options)
        except ValidationError as exc:
            prefix: Loc = ("targets", index, "options")
            raise ConfigError(sources.describe(exc.errors(), prefix, model)) from None


def extra_section(
    extra: Mapping[str, Any], name: str, model: type[_M], sources: ConfigSources | None = None
) -> _M:
    """``extra.<name>`` of the configuration (a part's own settings) validated by ``model``;
    ConfigError naming ``extra.<name>.<field>`` (and, given `sources`, where it was set)."""
    try:
        return model.model_validate(extra.get(name) or {})
    except ValidationError as error:
        sources = sources or ConfigSources(data={"extra": extra})
        raise ConfigError(sources.describe(error.errors(), ("extra", name), model)) from None


def _read_yaml(path: Path) -> tuple[dict[str, Any], Positions]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read relay configuration {path}: {exc.strerror}") from exc
    try:
        parsed = parse_yaml_positions(text, str(path))
    except YamlSyntaxError as exc:
        raise ConfigError(str(exc)) from None
    if parsed.duplicate_keys:
        loc, line, column = parsed.duplicate_keys[0]
        raise ConfigError(f"{path}:{line}:{column}: {format_loc(loc)}: duplicate key")
    if parsed.data is not None and not isinstance(parsed.data, dict):
        raise ConfigError(f"{path}:1:1: the top level must be a mapping")
    return parsed.data or {}, parsed.positions


def load_config(path: Path | None = None, environ: Mapping[str, str] | None = None) -> RelayConfig:
    """The configuration of `path` (else $SPYRE_RELAY_CONFIG, else none) overlaid by the
    environment; ConfigError with one line per problem, each naming the field and where it
    was set (file:line:col or the variable), at load: nothing starts with a bad setting."""
    environ = os.environ if environ is None else environ
    if path is None and environ.get(CONFIG_PATH_VAR):
        path = Path(environ[CONFIG_PATH_VAR])
    data, positions = _read_yaml(path) if path is not None else ({}, {})
    overrides, variables = _env_overrides(environ)
    data = _merge(data, overrides)
    sources = ConfigSources(path, positions, variables, data)
    try:
        config = RelayConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(sources.describe(exc.errors(), (), RelayConfig)) from None
    check_extra(config.extra, sources)
    check_target_options(config.targets, sources)
    return config

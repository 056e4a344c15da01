"""Operations: configuration errors, /healthz, /metrics, structured logs, the CLI, retention."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import httpx
import pytest
import yaml
from click.testing import CliRunner

from relay.cli import relay_group
from relay.config import ConfigError, load_config
from relay.logs import JsonFormatter
from relay.outbox import enqueue, list_dead_letters
from tests.relay.conftest import dispatching_config, make_config
from tests.support.fake_github import FakeGitHub, Fault
from tests.support.postgres import PostgresServer
from tests.support.relay_server import TEST_SECRET, InProcessRelay, fixture_body, post_webhook

# --- configuration -------------------------------------------------------------


def test_yaml_and_environment_are_merged(tmp_path: Path) -> None:
    path = tmp_path / "relay.yaml"
    path.write_text(
        yaml.safe_dump(
            {"webhook_secrets": ["from-file"], "github": {"token": "t", "timeout_seconds": 3}}
        )
    )
    config = load_config(
        path,
        {
            "SPYRE_RELAY_WEBHOOK_SECRETS": "new, old",
            "SPYRE_RELAY_GITHUB__TIMEOUT_SECONDS": "7",
            "SPYRE_RELAY_STORE_URL": "postgresql://db/relay",
        },
    )
    assert config.secret_bytes() == [b"new", b"old"]
    assert config.github.timeout_seconds == 7 and config.github.token is not None
    assert config.store_url == "postgresql://db/relay"


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        (
            "upstream_repo: pytorch/pytorch\n",
            {},
            "{path}: webhook_secrets: required"
            " (YAML key webhook_secrets or variable SPYRE_RELAY_WEBHOOK_SECRETS)",
        ),
        (
            "webhook_secrets: [s]\nretention_days: 1\n",
            {},
            "{path}:2:1: retention_days: Input should be greater than or equal to 3",
        ),
        (
            "webhook_secrets: [s]\n",
            {"SPYRE_RELAY_WORKER__MAX_ATTEMPTS": "many"},
            "SPYRE_RELAY_WORKER__MAX_ATTEMPTS: worker.max_attempts: Input should be a valid integer",
        ),
        (
            "webhook_secrets: [s]\ngithub:\n  app_id: '1'\n",
            {},
            "{path}:2:1: github: a GitHub App needs both app_id and private_key",
        ),
        (
            "webhook_secrets: [s]\nupstream_repo: pytorch\n",
            {},
            "{path}: upstream_repo 'pytorch' must be owner/repo",
        ),
        (
            "webhook_secrets: [s]\ntypo_field: 1\n",
            {},
            "{path}:2:1: typo_field: unknown key 'typo_field' (known: allowlist, extra, github,",
        ),
        (
            "webhook_secrets: [s]\nworker: {lease_seconds: 5}\ngithub: {timeout_seconds: 10}\n",
            {},
            "{path}: worker.lease_seconds (5.0) must exceed github.timeout_seconds (10.0)",
        ),
        (  # YAML 1.1 reads OFF as false: the error shows what was read
            "webhook_secrets: [s]\nsqlite_synchronous: OFF\n",
            {},
            "{path}:2:1: sqlite_synchronous: Input should be 'FULL' or 'NORMAL' (got False)",
        ),
        (
            "webhook_secrets: [s]\nstore_url: mysql://db/relay\n",
            {},
            "{path}:2:1: store_url: store URL 'mysql://db/relay': expected sqlite:///PATH",
        ),
        (
            "webhook_secrets: [s]\ntargets:\n  - {name: acme/ci, connection: locl}\n",
            {},
            "{path}:3:21: targets[acme/ci].connection: unknown connection 'locl'"
            " (known: github, local)",
        ),
        (
            "webhook_secrets: [s]\ntargets:\n  - {name: acme/ci, connection: local, level: L5}\n",
            {},
            "{path}:3:40: targets[acme/ci].level: Input should be 'L1', 'L2', 'L3' or 'L4'",
        ),
        (
            "webhook_secrets: [s]\ntargets:\n  - name: local/x\n    connection: local\n"
            "    options: {upstream_url: /x, events: [pull_requests]}\n",
            {},
            "{path}:5:33: targets[local/x].options.events: unknown event group(s) pull_requests"
            " (known: check_run, check_suite, nightly, periodic, pull_request, push)",
        ),
        (
            "webhook_secrets: [s]\nextra:\n  dashboard: {refresh_secondz: 3}\n",
            {},
            "{path}:3:15: extra.dashboard.refresh_secondz: unknown key 'refresh_secondz'"
            " (known: refresh_seconds, warm_cache)",
        ),
        (
            "webhook_secrets: [s]\n",
            {"SPYRE_RELAY_EXTRA__DASHBOARD__REFRESH_SECONDS": "-4"},
            "SPYRE_RELAY_EXTRA__DASHBOARD__REFRESH_SECONDS: extra.dashboard.refresh_seconds:"
            " Input should be greater than or equal to 0",
        ),
        (
            "webhook_secrets: [s\nstore_url: x\n",
            {},
            "{path}:2:10: malformed YAML: expected ',' or ']', but got ':'",
        ),
        (
            "webhook_secrets: [s]\nworker: {concurrency: 2}\nworker: {concurrency: 3}\n",
            {},
            "{path}:3:1: worker: duplicate key",
        ),
    ],
)
def test_a_bad_setting_is_one_line_naming_where_it_was_set(
    tmp_path: Path, text: str, env: dict[str, str], expected: str
) -> None:
    path = tmp_path / "relay.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path, env)
    lines = str(caught.value).splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(expected.format(path=path)), lines[0]


def test_every_bad_setting_gets_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "relay.yaml"
    path.write_text("webhook_secrets: [s]\nworker:\n  concurrency: 0\n  max_attempts: 0\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, {})
    assert str(caught.value).splitlines() == [
        f"{path}:3:3: worker.concurrency: Input should be greater than or equal to 1",
        f"{path}:4:3: worker.max_attempts: Input should be greater than or equal to 1",
    ]


def test_unreadable_or_non_mapping_configuration(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read relay configuration"):
        load_config(tmp_path / "missing.yaml", {})
    (tmp_path / "list.yaml").write_text("- a\n")
    with pytest.raises(ConfigError, match=r"list\.yaml:1:1: the top level must be a mapping"):
        load_config(tmp_path / "list.yaml", {})


def test_cli_reports_configuration_errors_as_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "relay.yaml"
    path.write_text("webhook_secrets: []\n")
    result = CliRunner().invoke(relay_group, ["status", "--config", str(path)], env={})
    assert result.exit_code == 2 and "webhook_secrets" in result.output


# --- health and metrics -----------------------------------------------------------


@pytest.mark.postgres
def test_healthz_and_webhooks_answer_503_while_the_database_is_down(
    allowlist: object, postgres_server: PostgresServer
) -> None:
    server = PostgresServer(postgres_server.bindir).start()  # our own, to stop it
    try:
        with InProcessRelay(
            make_config(server.new_database(), store_timeout_seconds=1), allowlist=allowlist
        ) as relay:
            assert httpx.get(f"{relay.url}/healthz").json() == {"status": "ok", "store": "postgres"}
            server.stop()
            assert httpx.get(f"{relay.url}/healthz", timeout=10).status_code == 503
            response = post_webhook(relay.url, "push", fixture_body("push"))
            assert response.status_code == 503 and "unavailable" in response.json()["error"]
    finally:
        server.stop()


def test_metrics_count_deliveries_dispatches_retries_and_queue_depth(
    dispatching_relay: InProcessRelay, fake_github: FakeGitHub
) -> None:
    fake_github.inject(Fault.status_code(500, path="/repos/org/stable/"))
    post_webhook(dispatching_relay.url, "push", fixture_body("push"), delivery_id="m1")
    post_webhook(dispatching_relay.url, "push", fixture_body("push"), delivery_id="m1")
    post_webhook(dispatching_relay.url, "push", fixture_body("push"), secret="wrong")
    text = httpx.get(f"{dispatching_relay.url}/metrics").text
    assert 'relay_queue_depth{kind="dispatch",state="pending"} 3.0' in text
    dispatching_relay.worker().run_once(limit=10)
    text = httpx.get(f"{dispatching_relay.url}/metrics").text
    assert 'relay_deliveries_total{event="push",result="dispatch"} 1.0' in text
    assert 'relay_deliveries_total{event="push",result="duplicate"} 1.0' in text
    assert 'relay_deliveries_total{event="push",result="rejected_401"} 1.0' in text
    assert 'relay_job_attempts_total{kind="dispatch",result="ok"} 2.0' in text
    assert 'relay_job_attempts_total{kind="dispatch",result="retry"} 1.0' in text
    assert 'relay_dispatch_latency_seconds_count{kind="dispatch"} 2.0' in text
    assert 'relay_queue_depth{kind="dispatch",state="pending"} 1.0' in text


def test_metrics_report_dead_letters_from_the_store_in_every_process(
    sqlite_url: str, allowlist: object, fake_github: FakeGitHub
) -> None:
    config = dispatching_config(sqlite_url, fake_github, worker={"max_attempts": 1})
    fake_github.inject(Fault.status_code(502, path="/repos/org/observed/"))
    with InProcessRelay(config, allowlist=allowlist) as relay:
        post_webhook(relay.url, "push", fixture_body("push"), delivery_id="dead-1")
        text = httpx.get(f"{relay.url}/metrics").text
        assert 'relay_queue_depth{kind="dispatch",state="dead"} 0.0' in text
        assert "relay_store_up 1.0" in text
        relay.worker().run_once(limit=10)
    # Another process (a web server that never ran the worker) sees the same dead letter.
    with InProcessRelay(config, allowlist=allowlist) as other:
        text = httpx.get(f"{other.url}/metrics").text
        assert 'relay_queue_depth{kind="dispatch",state="dead"} 1.0' in text
        assert "relay_store_up 1.0" in text


def test_logs_are_json_lines_carrying_the_delivery_id(
    dispatching_relay: InProcessRelay, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="relay"):
        post_webhook(dispatching_relay.url, "push", fixture_body("push"), delivery_id="log-me")
        dispatching_relay.worker().run_once(limit=10)
    records = [r for r in caplog.records if getattr(r, "delivery_id", None) == "log-me"]
    assert {r.name for r in records} >= {"relay.webhook", "relay.worker"}
    line = json.loads(JsonFormatter().format(records[-1]))
    assert line["delivery_id"] == "log-me" and line["level"] == "info" and "target" in line


# --- the CLI ----------------------------------------------------------------------


def _write(tmp_path: Path, config: object) -> Path:
    path = tmp_path / "cli.yaml"
    data = config.model_dump(mode="json")  # type: ignore[attr-defined]
    data["webhook_secrets"] = [TEST_SECRET]
    data["github"]["token"] = "test-token"
    path.write_text(yaml.safe_dump(data))
    return path


def test_status_dead_letters_and_requeue(
    tmp_path: Path, sqlite_url: str, allowlist: object, fake_github: FakeGitHub
) -> None:
    config = dispatching_config(sqlite_url, fake_github, worker={"max_attempts": 1})
    path = _write(tmp_path, config)
    fake_github.inject(Fault.status_code(502, path="/repos/org/observed/"))
    runner = CliRunner()
    with InProcessRelay(config, allowlist=allowlist) as relay:
        post_webhook(relay.url, "push", fixture_body("push"), delivery_id="cli-1")
        status = json.loads(
            runner.invoke(relay_group, ["status", "--config", str(path), "--json"]).output
        )
        assert status["pending"] == {"dispatch": 3} and status["dead_letters"] == 0
        assert status["oldest_pending_age_seconds"] >= 0
        relay.worker().run_once(limit=10)
        listed = runner.invoke(relay_group, ["dead-letters", "--config", str(path)])
        assert (
            listed.exit_code == 0 and "org/observed" in listed.output and "cli-1" in listed.output
        )
        human = runner.invoke(relay_group, ["status", "--config", str(path)])
        assert "dead letters: 1" in human.output
        [dead] = list_dead_letters(relay.state.store)
        requeued = runner.invoke(
            relay_group, ["dead-letters", "--config", str(path), "--requeue", dead["job_id"]]
        )
        assert requeued.output.strip() == "requeued 1 job(s)"
        relay.worker().run_once(limit=10)
    assert sorted(fake_github.dispatched_pairs()) == [
        ("cli-1", "org/observed"),
        ("cli-1", "org/onboarding"),
        ("cli-1", "org/stable"),
    ]


def test_send_test_event_signs_and_posts(tmp_path: Path, relay: InProcessRelay) -> None:
    path = _write(tmp_path, relay.state.config)
    payload = tmp_path / "push.json"
    payload.write_bytes(fixture_body("push"))
    result = CliRunner().invoke(
        relay_group,
        [
            "send-test-event",
            "--config",
            str(path),
            "--url",
            relay.url,
            "--event",
            "push",
            "--payload",
            str(payload),
            "--delivery-id",
            "cli-evt",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("202 ") and '"delivery_id":"cli-evt"' in result.output


def test_dead_letters_by_id_lists_only_those_and_refuses_unknown_ids(
    tmp_path: Path, sqlite_url: str, allowlist: object, fake_github: FakeGitHub
) -> None:
    config = dispatching_config(sqlite_url, fake_github, worker={"max_attempts": 1})
    path = _write(tmp_path, config)
    fake_github.inject(Fault.status_code(502, path="/repos/org/", count=3))
    runner = CliRunner()
    with InProcessRelay(config, allowlist=allowlist) as relay:
        post_webhook(relay.url, "push", fixture_body("push"), delivery_id="ids-1")
        relay.worker().run_once(limit=10)
        dead = {d["target"]: d["job_id"] for d in list_dead_letters(relay.state.store)}
        assert len(dead) == 3
        one = dead["org/observed"]
        listed = runner.invoke(relay_group, ["dead-letters", "--config", str(path), one])
        assert listed.exit_code == 0 and one in listed.output
        assert "org/observed" in listed.output and "org/stable" not in listed.output
        for args in (["nope-1"], ["--requeue", one, "nope-1"]):
            refused = runner.invoke(relay_group, ["dead-letters", "--config", str(path), *args])
            assert refused.exit_code == 2, refused.output  # an id naming nothing: bad input
            assert "nope-1" in refused.output and one not in refused.output
        # Nothing was requeued by the refused command.
        assert len(list_dead_letters(relay.state.store)) == 3


@pytest.mark.parametrize("event", ["push", "pull_request"])
def test_send_test_event_builds_a_payload_of_the_event(
    tmp_path: Path, relay: InProcessRelay, event: str
) -> None:
    path = _write(tmp_path, relay.state.config)
    result = CliRunner().invoke(
        relay_group,
        ["send-test-event", "--config", str(path), "--url", relay.url, "--event", event,
         "--delivery-id", f"default-{event}"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.output.startswith("202 ") and '"route":"dispatch"' in result.output
    with relay.state.store.transaction(write=False) as tx:
        row = tx.fetchone(
            "SELECT event, payload FROM deliveries WHERE delivery_id = ?", (f"default-{event}",)
        )
    assert row is not None and row["event"] == event
    payload = json.loads(row["payload"])
    assert payload["repository"]["full_name"] == relay.state.config.upstream_repo
    if event == "push":
        assert payload["ref"] == "refs/heads/main"
        assert len(payload["before"]) == len(payload["after"]) == 40
        assert "pull_request" not in payload
    else:
        assert payload["pull_request"]["head"]["sha"]


def test_send_test_event_without_a_default_payload_is_a_usage_error(
    tmp_path: Path, relay: InProcessRelay
) -> None:
    path = _write(tmp_path, relay.state.config)
    result = CliRunner().invoke(
        relay_group, ["send-test-event", "--config", str(path), "--url", relay.url,
                      "--event", "check_run"],
    )  # fmt: skip
    assert result.exit_code == 2 and "--payload" in result.output


# --- retention -------------------------------------------------------------------


def test_worker_prunes_after_the_retention_window(
    sqlite_url: str, allowlist: object, fake_github: FakeGitHub
) -> None:
    from relay.worker import prune_task

    with InProcessRelay(dispatching_config(sqlite_url, fake_github), allowlist=allowlist) as relay:
        post_webhook(relay.url, "push", fixture_body("push"), delivery_id="old")
        relay.worker().run_once(limit=10)
        store = relay.state.store
        with store.transaction() as tx:
            tx.execute("UPDATE deliveries SET received_at = ?", (time.time() - 3.1 * 86400,))
            tx.execute("UPDATE outbox SET done_at = ?", (time.time() - 3.1 * 86400,))
            tx.execute("UPDATE dispatches SET dispatched_at = ?", (time.time() - 2.9 * 86400,))
            enqueue(
                tx, kind="dispatch", target="org/x", body={}, dedupe_key="fresh", now=time.time()
            )
        prune_task(relay.state)
        with store.transaction(write=False) as tx:
            assert tx.scalar("SELECT COUNT(*) FROM deliveries") == 0
            assert tx.scalar("SELECT COUNT(*) FROM outbox") == 1  # the pending one stays
            assert tx.scalar("SELECT COUNT(*) FROM dispatches") == 3  # younger than 3 days

-- Per-test results (issue 13). The failure kind of every completed job (test,
-- infrastructure, timeout, cancelled, unclassified) and the step that decided it; the
-- per-leg (shard) outcomes shown as grid columns; the run's steps, outcome counts and
-- log tail (JSON, read by the run page); how far a running job is.
ALTER TABLE job_runs ADD COLUMN failure_kind TEXT;
ALTER TABLE job_runs ADD COLUMN failure_step TEXT;
ALTER TABLE job_runs ADD COLUMN legs TEXT;
ALTER TABLE job_runs ADD COLUMN run_details TEXT;
ALTER TABLE job_runs ADD COLUMN progress_done INTEGER;
ALTER TABLE job_runs ADD COLUMN progress_total INTEGER;
ALTER TABLE job_runs ADD COLUMN progress_step TEXT;
-- Jobs finished before this migration: the kind their conclusion alone tells.
UPDATE job_runs SET failure_kind = 'timeout' WHERE conclusion = 'timed_out';
UPDATE job_runs SET failure_kind = 'cancelled' WHERE conclusion = 'cancelled';
UPDATE job_runs SET failure_kind = 'unclassified' WHERE conclusion IN ('failure', 'startup_failure', 'action_required');
-- The failed and errored tests of a job, with the message excerpt the downstream sent.
-- test_key: a number derived from the node id (first 60 bits of its SHA-256).
CREATE TABLE test_failures (
    delivery_id TEXT NOT NULL,
    repo TEXT NOT NULL,
    run_id BIGINT NOT NULL,
    run_attempt INTEGER NOT NULL,
    job_name TEXT NOT NULL,
    test_key BIGINT NOT NULL,
    node_id TEXT NOT NULL,
    outcome TEXT NOT NULL,
    message TEXT,
    location TEXT,
    duration DOUBLE PRECISION,
    shard TEXT,
    head_sha TEXT,
    event_at DOUBLE PRECISION NOT NULL,
    received_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (delivery_id, repo, run_id, run_attempt, job_name, test_key)
);
CREATE INDEX test_failures_repo_test ON test_failures (repo, test_key, event_at);
CREATE INDEX test_failures_repo_received ON test_failures (repo, received_at);
CREATE INDEX test_failures_received ON test_failures (received_at);
-- Each test's recent outcomes per backend (relay/results/history.py): the last N as
-- JSON, newest first, plus the newest pass ever seen and the last flip on one SHA.
CREATE TABLE test_status (
    repo TEXT NOT NULL,
    test_key BIGINT NOT NULL,
    node_id TEXT NOT NULL,
    history TEXT NOT NULL,
    last_code TEXT,
    last_event_at DOUBLE PRECISION,
    last_pass_at DOUBLE PRECISION,
    last_pass_sha TEXT,
    last_pass_delivery TEXT,
    flaky_count INTEGER NOT NULL DEFAULT 0,
    flaky_at DOUBLE PRECISION,
    flaky_sha TEXT,
    updated_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (repo, test_key)
);
CREATE INDEX test_status_test ON test_status (test_key);
CREATE INDEX test_status_repo_flaky ON test_status (repo, flaky_at);
CREATE INDEX test_status_updated ON test_status (updated_at);

-- The callback state machine and the result of each downstream job.
CREATE TABLE job_runs (
    delivery_id TEXT NOT NULL,
    repo TEXT NOT NULL,
    run_id BIGINT NOT NULL,
    run_attempt INTEGER NOT NULL,
    job_name TEXT NOT NULL,
    workflow_name TEXT,
    event_type TEXT,
    pr_number BIGINT,
    head_sha TEXT,
    status TEXT NOT NULL,
    conclusion TEXT,
    check_run_id BIGINT,
    url TEXT,
    artifact_url TEXT,
    started_at DOUBLE PRECISION,
    completed_at DOUBLE PRECISION,
    dispatched_at DOUBLE PRECISION,
    in_progress_received_at DOUBLE PRECISION,
    completed_received_at DOUBLE PRECISION,
    queue_time DOUBLE PRECISION,
    execution_time DOUBLE PRECISION,
    tests_passed INTEGER,
    tests_failed INTEGER,
    tests_skipped INTEGER,
    tests_total INTEGER,
    selection_id TEXT,
    last_payload TEXT,
    updated_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (delivery_id, repo, run_id, run_attempt, job_name)
);
CREATE INDEX job_runs_repo_updated ON job_runs (repo, updated_at);
CREATE INDEX job_runs_pr_number ON job_runs (pr_number);
CREATE INDEX job_runs_head_sha ON job_runs (head_sha);

-- Dashboard reads (relay/dashboard/queries.py); each index serves the query named.
-- Per-backend windows (pass rates, medians, L3 criteria, daily metrics): covering,
-- so the aggregates never touch the table.
CREATE INDEX job_runs_repo_completed ON job_runs (repo, completed_received_at, conclusion, queue_time, execution_time);
-- Grid filtered by conclusion: the newest events with a job of that conclusion.
CREATE INDEX job_runs_repo_conclusion ON job_runs (repo, conclusion, updated_at);
-- Grid rows: the newest events dispatched to one backend.
CREATE INDEX dispatches_repo_dispatched ON dispatches (repo, dispatched_at);
-- Upstream commit page: dispatches of one head SHA (prefix range).
CREATE INDEX dispatches_head_sha ON dispatches (head_sha);
-- Relay-health card: the running job waiting longest.
CREATE INDEX job_runs_status_progress ON job_runs (status, in_progress_received_at);

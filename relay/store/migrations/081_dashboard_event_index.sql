-- Grid rows of nightly/periodic runs (no dispatch record): the newest events of one type.
CREATE INDEX job_runs_repo_event ON job_runs (repo, event_type, updated_at);

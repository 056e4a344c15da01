-- Dashboard reads of issue 13. The day rollups read the failure kind too (infrastructure
-- failures are left out of pass rates and L3 readiness): the covering index gains it.
CREATE INDEX job_runs_repo_completed_kind ON job_runs (repo, completed_received_at, conclusion, failure_kind, queue_time, execution_time);
DROP INDEX job_runs_repo_completed;
-- The backend page's failure-kind filter (?kind=infrastructure): the newest jobs of a kind.
CREATE INDEX job_runs_repo_kind ON job_runs (repo, failure_kind, updated_at);

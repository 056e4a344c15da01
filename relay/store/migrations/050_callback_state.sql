-- Callback state machine details (issue 7): the digest of the accepted callback of each
-- step (identical repeats are acknowledged, different ones rejected), the callback token
-- used, and when the sweeper timed the job out.
ALTER TABLE job_runs ADD COLUMN in_progress_digest TEXT;
ALTER TABLE job_runs ADD COLUMN completed_digest TEXT;
ALTER TABLE job_runs ADD COLUMN callback_token_id TEXT;
ALTER TABLE job_runs ADD COLUMN swept_at DOUBLE PRECISION;
ALTER TABLE job_runs ADD COLUMN identity TEXT;
CREATE INDEX job_runs_status_received ON job_runs (status, in_progress_received_at);

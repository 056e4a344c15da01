-- When a job's first attempt failed: the worker gives a job up (dead letter) only after it has
-- been failing for `worker.retry_window_seconds` (24 h by default), however many attempts that
-- took. NULL while the job has not failed; reset when a dead letter is requeued.
ALTER TABLE outbox ADD COLUMN first_failed_at DOUBLE PRECISION;
ALTER TABLE dead_letters ADD COLUMN first_failed_at DOUBLE PRECISION;

-- The check run id a job reported, as text (issue 7 follow-up): CRCR's callback action
-- sends job.check_run_id as a string and falls back to "<run_id>-<run_attempt>" when
-- GitHub gives none (Buildkite always). job_runs.check_run_id (BIGINT) keeps numeric
-- ids for older readers; check_run_ref holds every id, numeric or not.
ALTER TABLE job_runs ADD COLUMN check_run_ref TEXT;
UPDATE job_runs SET check_run_ref = CAST(check_run_id AS TEXT) WHERE check_run_id IS NOT NULL;

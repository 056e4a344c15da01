-- Durable work of every kind (dispatch, hud, check_run, rerun, commit_status, redeliver, local_run).
-- One row per unit of work; dedupe_key makes enqueueing idempotent.
CREATE TABLE outbox (
    job_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    dedupe_key TEXT NOT NULL UNIQUE,
    delivery_id TEXT,
    target TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at DOUBLE PRECISION NOT NULL,
    lease_owner TEXT,
    lease_expires_at DOUBLE PRECISION,
    last_error TEXT,
    created_at DOUBLE PRECISION NOT NULL,
    done_at DOUBLE PRECISION
);
CREATE INDEX outbox_ready ON outbox (state, kind, next_attempt_at);
CREATE INDEX outbox_delivery ON outbox (delivery_id);
CREATE INDEX outbox_done_at ON outbox (done_at);

-- Jobs that exhausted their attempts; `spyre-ci relay dead-letters --requeue` moves them back.
CREATE TABLE dead_letters (
    job_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    dedupe_key TEXT NOT NULL,
    delivery_id TEXT,
    target TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt_at DOUBLE PRECISION NOT NULL,
    lease_owner TEXT,
    lease_expires_at DOUBLE PRECISION,
    last_error TEXT,
    created_at DOUBLE PRECISION NOT NULL,
    done_at DOUBLE PRECISION,
    died_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX dead_letters_died_at ON dead_letters (died_at);

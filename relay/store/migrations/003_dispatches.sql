-- CRCR's DISPATCHED record, one per (delivery, downstream repository).
CREATE TABLE dispatches (
    delivery_id TEXT NOT NULL,
    repo TEXT NOT NULL,
    level TEXT,
    event_type TEXT NOT NULL,
    pr_number BIGINT,
    head_sha TEXT,
    labels TEXT,
    dispatched_at DOUBLE PRECISION NOT NULL,
    callback_token_id TEXT,
    PRIMARY KEY (delivery_id, repo)
);
CREATE INDEX dispatches_dispatched_at ON dispatches (dispatched_at);
CREATE INDEX dispatches_pr_number ON dispatches (pr_number);

-- Every accepted webhook, unique on X-GitHub-Delivery (redeliveries are acknowledged, not re-enqueued).
CREATE TABLE deliveries (
    delivery_id TEXT PRIMARY KEY,
    event TEXT NOT NULL,
    action TEXT,
    repo TEXT,
    route TEXT NOT NULL,
    pr_number BIGINT,
    head_sha TEXT,
    payload TEXT NOT NULL,
    received_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX deliveries_received_at ON deliveries (received_at);

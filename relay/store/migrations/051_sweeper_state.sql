-- Sweepers (issue 7): tags seen upstream (webhook or poll), so that a tag GitHub sent no
-- event for (more than 3 tags pushed at once) is noticed and dispatched exactly once; and
-- the webhook deliveries we asked GitHub to redeliver (each at most once).
CREATE TABLE known_tags (
    tag TEXT PRIMARY KEY,
    sha TEXT,
    source TEXT NOT NULL,
    seen_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE redelivery_requests (
    hook_delivery_id TEXT PRIMARY KEY,
    guid TEXT,
    event TEXT,
    requested_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX redelivery_requests_at ON redelivery_requests (requested_at);

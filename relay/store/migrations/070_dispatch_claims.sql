-- Effectively once (issue 14): the one downstream run a dispatch belongs to. The first run
-- that claims the dispatch (POST /github/claim, its first step) or reports on it binds the
-- dispatch's callback token to its (run_id, run_attempt); any other run presenting the
-- token is told "duplicate" at its claim and refused (403) at its callbacks. A duplicate
-- dispatch (the outbox is at-least-once) therefore never yields a second result.
CREATE TABLE dispatch_claims (
    delivery_id TEXT NOT NULL,
    repo TEXT NOT NULL,
    run_id BIGINT NOT NULL,
    run_attempt INTEGER NOT NULL,
    claimed_by TEXT NOT NULL,
    claimed_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (delivery_id, repo)
);
CREATE INDEX dispatch_claims_claimed_at ON dispatch_claims (claimed_at);
-- A re-run the relay asked GitHub for (check run / check suite "Re-run"): the next attempt
-- of that run may take over its dispatch's binding, once per request.
CREATE TABLE rerun_grants (
    repo TEXT NOT NULL,
    run_id BIGINT NOT NULL,
    granted_at DOUBLE PRECISION NOT NULL,
    pending INTEGER NOT NULL,
    PRIMARY KEY (repo, run_id)
);
CREATE INDEX rerun_grants_granted_at ON rerun_grants (granted_at);

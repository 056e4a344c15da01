-- Rows received on /api/crcr/results when the relay plays the HUD.
CREATE TABLE hud_rows (
    key TEXT PRIMARY KEY,
    verified_repo TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    body TEXT NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX hud_rows_repo_updated ON hud_rows (verified_repo, updated_at);

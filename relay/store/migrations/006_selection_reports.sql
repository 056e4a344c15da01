-- A selection run's summary and HTML report.
CREATE TABLE selection_reports (
    selection_id TEXT PRIMARY KEY,
    summary TEXT NOT NULL,
    html TEXT,
    repo TEXT,
    delivery_id TEXT,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX selection_reports_delivery ON selection_reports (delivery_id);

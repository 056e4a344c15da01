-- The level history of each downstream repository, as read from the allowlist.
CREATE TABLE repo_levels (
    repo TEXT NOT NULL,
    since DOUBLE PRECISION NOT NULL,
    level TEXT NOT NULL,
    PRIMARY KEY (repo, since)
);

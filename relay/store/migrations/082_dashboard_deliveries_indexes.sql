-- Change pages: the newest stored webhook of a PR or of a head commit (its title, author).
CREATE INDEX deliveries_pr_received ON deliveries (pr_number, received_at);
CREATE INDEX deliveries_head_sha ON deliveries (head_sha);

"""Per-test results of downstream runs: what failed, why, since when, and how often (issue 13).

`report` validates the callback's `run_report`/`progress` (spyre-ci's additions to CRCR's
body); `classify` tells test failures from infrastructure, timeouts and cancellations;
`history` keeps each test's recent outcomes per backend (suspect range, flakiness);
`suspects` reads the upstream change that selected a test from its selection report;
`records` writes all of it in the callback's transaction; `prune` enforces retention.
"""

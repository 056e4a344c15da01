"""`spyre-ci ci`: the downstream side of the loop.

What a backend's `upstream-dispatch.yml` workflow runs (and what the relay's local
target runs on one machine): plan the run from the relay's dispatch, check out the
upstream sources, select, test, and call back to the relay. Pure decisions live in
`plan`, `junit` and `callback`; `runner_env`, `oidc`, `send`, `upstream` and
`steps` are thin shells around the environment, HTTP, git and subprocesses.
"""

"""The relay: CRCR-compatible webhook ingest, durable outbox, dispatch workers.

See docs/relay.md for the module map and the extension points (routers, job
handlers, dispatchers, migrations).
"""

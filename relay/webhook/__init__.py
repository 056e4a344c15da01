"""Webhook ingest: verify (signature.py), route (routing.py), store and enqueue (ingest.py)."""

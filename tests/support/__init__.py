"""Shared test support: loopback fakes of external services and server launchers."""

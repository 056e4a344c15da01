"""Thin shells that obtain upstream sources: git trees, release wheels, the local mirror."""

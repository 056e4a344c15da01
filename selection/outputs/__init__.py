"""What `spyre-ci select` writes: selection.json, pytest lists, shards, overlay, reports."""

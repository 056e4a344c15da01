"""The relay's dashboard: HUD-style `/crcr` pages and their JSON twins (docs/dashboard.md)."""

"""Which callback-supplied URLs the dashboard may turn into links (pure).

A downstream reports `url` and `artifact_url` in its callback. They are not
trusted: a link is shown only when it points at the reporting repository's own
pages on its own host, so a compromised or careless downstream cannot make the
dashboard link to arbitrary sites (phishing) or to `javascript:` URLs.
"""

from __future__ import annotations

from urllib.parse import urlsplit

# Hosts whose repository pages live at https://HOST/OWNER/REPO/...
DEFAULT_FORGE_HOSTS: tuple[str, ...] = ("github.com",)


def allowed_link(
    url: str | None, repo: str, forge_hosts: tuple[str, ...] = DEFAULT_FORGE_HOSTS
) -> str | None:
    """Return `url` if it is an https link under `https://<forge>/<repo>/`, else None.

    `repo` is the verified `owner/name` of the reporting repository. Owner and
    name compare case-insensitively (GitHub's own rule); user-info, ports and
    backslashes are refused because browsers and parsers disagree about them.
    """
    if not url or not repo or "\\" in url or any(ord(c) < 0x21 for c in url):
        return None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme != "https" or parts.username or parts.password or port is not None:
        return None
    host = (parts.hostname or "").lower()
    if host not in forge_hosts:
        return None
    segments = parts.path.split("/")
    if len(segments) < 3 or segments[0] != "":
        return None
    owner, name = repo.lower().split("/", 1) if "/" in repo else (repo.lower(), "")
    if segments[1].lower() != owner or segments[2].lower() != name:
        return None
    return url

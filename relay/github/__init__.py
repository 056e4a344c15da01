"""The GitHub connection: authentication (App or token), paced HTTP, error mapping."""

from relay.github.client import GitHubClient
from relay.github.errors import GitHubError, GitHubPermanentError, GitHubRetryableError

__all__ = ["GitHubClient", "GitHubError", "GitHubPermanentError", "GitHubRetryableError"]

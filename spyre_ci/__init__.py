"""spyre-ci: the command-line package that ties the relay, the selection and the runner together."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("spyre-ci")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

"""The version of ddplint (one place: the package, the cache key, SARIF and the CLI read it here)."""

__version__ = "0.1.0"

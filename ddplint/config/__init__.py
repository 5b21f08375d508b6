"""Configuration: `[tool.ddplint]` discovery, validation and rule selection."""

from ddplint.config.settings import Settings

__all__ = ["Settings"]

"""The runtime checks: one module per check, registered by definition."""

from __future__ import annotations

import importlib
import pkgutil

for _module in sorted(info.name for info in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")

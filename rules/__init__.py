"""The rule catalogue: one module per rule, named after its code.

Importing this package imports every module in it, and each rule registers
itself by subclassing `ddplint.rule.Rule`; there is no list to keep. Installed,
this directory is the subpackage `ddplint.rules`.
"""

from __future__ import annotations

import importlib
import pkgutil

for _module in sorted(info.name for info in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")

"""Who splits a DataLoader's data across the ranks besides a sampler or the
dataset itself: a framework the module hands its loaders to (accelerate's
`prepare`, the Hugging Face Trainer), and which loaders are for evaluation
by their names (`val_loader`, `test_set`), where every rank may read all."""

from __future__ import annotations

import re

from ddplint.knowledge import EVALUATION_NAMES, LOADER_SHARDING_FRAMEWORKS
from ddplint.analysis.data import loader_names
from ddplint.lazy import cst

_EVALUATION = re.compile(EVALUATION_NAMES)
_FRAMEWORKS = re.compile(LOADER_SHARDING_FRAMEWORKS)


def framework_shards_loaders(source: str) -> bool:
    """Whether the module's text hands its loaders to a framework that splits
    them across processes (`accelerator.prepare(...)`, `prepare_data_loader`,
    `Trainer(...)`)."""
    return _FRAMEWORKS.search(source) is not None


def evaluation_loader(stack: list[cst.CSTNode], dataset: cst.CSTNode | None) -> bool:
    """Whether the DataLoader call at the top of `stack` is for evaluation by
    the names it is known by: what it is assigned to and its dataset's name."""
    return _EVALUATION.search(loader_names(stack, dataset)) is not None

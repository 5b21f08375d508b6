"""What a Dataset class holds (`analysis.datasets`), asked of the model with no rule involved:
which attributes `__getitem__` reads per sample and which of them `__init__` fills with a
Python container of objects or a pandas frame."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddplint.analysis.datasets import held_python_objects
from ddplint.testing import model_of


def held(source: str) -> dict[str, list[str]]:
    """Class name -> the attributes `held_python_objects` names, asked where the class stands."""
    model = model_of(textwrap.dedent(source))
    ctx, found = model.model, {}
    for node, _ in model.statements.values():
        if isinstance(node, cst.ClassDef):
            stack, mark = model.positions[node]
            ctx.stack[:] = stack
            try:
                with ctx.scopes.restored(mark):
                    found[node.name.value] = [attr for attr, _ in held_python_objects(node, ctx)]
            finally:
                ctx.stack.clear()
    return found


HEAD = """
import glob, json
import numpy as np
import pandas as pd
from torch.utils.data import Dataset
"""


@pytest.mark.parametrize(
    ("init", "getitem", "expected"),
    [
        ("self.items = json.load(open(path))", "return self.items[i]", ["items"]),
        ("self.items = sorted(glob.glob(path + '/*.png'))", "return self.items[i]", ["items"]),
        ("self.items = [line.strip() for line in open(path)]", "return self.items[i]", ["items"]),
        ("self.items = list(zip(glob.glob(path), range(9)))", "return self.items[i]", ["items"]),
        ("self.df = pd.read_csv(path)", "return self.df.iloc[i]", ["df"]),
        ("self.paths = pd.read_csv(path)['image_path'].values", "return self.paths[i]", ["paths"]),
        # not Python objects per sample
        ("self.items = np.load(path)", "return self.items[i]", []),
        ("self.labels = pd.read_csv(path)['label'].values", "return self.labels[i]", []),
        ("self.index = {c: k for k, c in enumerate(path)}", "return self.index[i]", []),
        ("self.cfg = json.load(open(path))", "return self.cfg['root']", []),
        ("self.items = json.load(open(path))", "return len(self.items)", []),
    ],
)
def test_what_init_stores_and_getitem_indexes(init: str, getitem: str, expected: list[str]) -> None:
    source = HEAD + f"""
class Items(Dataset):
    def __init__(self, path):
        {init}

    def __getitem__(self, i):
        {getitem}
"""
    assert held(source) == {"Items": expected}


def test_followed_through_helpers_builders_and_base_classes() -> None:
    source = HEAD + """
def make_dataset(root):
    found = []
    for name in sorted(glob.glob(root)):
        found.append((name, 0))
    return found


class Base(Dataset):
    def __init__(self, root):
        self.samples = make_dataset(root)
        self.extra = []
        self._scan(root)

    def _scan(self, root):
        for name in glob.glob(root):
            self.extra.append({"path": name})

    def __getitem__(self, i):
        return self._load(i)

    def _load(self, i):
        return self.samples[i], self.extra[i]


class Child(Base):
    def _load(self, i):
        return self.samples[i]


class NoItems(Dataset):
    def __init__(self, root):
        self.samples = make_dataset(root)
"""
    assert held(source) == {"Base": ["samples", "extra"], "Child": ["samples"], "NoItems": []}


def test_parameters_follow_every_construction_site() -> None:
    source = HEAD + """
class Records(Dataset):
    def __init__(self, records):
        self.records = records

    def __getitem__(self, i):
        return self.records[i]


class Arrays(Dataset):
    def __init__(self, values):
        self.values = values

    def __getitem__(self, i):
        return self.values[i]


train = Records(json.load(open("train.json")))
valid = Records(json.load(open("valid.json")))
a = Arrays(json.load(open("a.json")))
b = Arrays(np.zeros(3))
"""
    assert held(source) == {"Records": ["records"], "Arrays": []}

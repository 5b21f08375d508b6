"""Who splits a DataLoader's data besides a sampler (`analysis.sharding`): a framework
the module hands its loaders to, and loaders meant for evaluation by their names."""

from __future__ import annotations

import libcst as cst
import pytest

from ddplint.analysis.sharding import evaluation_loader, framework_shards_loaders


@pytest.mark.parametrize(
    ("source", "sharded"),
    [
        ("loader = accelerator.prepare(loader)", True),
        ("model, loader = self.accelerate.prepare(model, loader)", True),
        ("loader = prepare_data_loader(loader)", True),
        ("trainer = Seq2SeqTrainer(model=model, train_dataset=ds)", True),
        ("trainer = Trainer(model, args)", True),
        ("data = prepare(loader)", False),
        ("trainer = MyTrainerConfig()", False),
        ("loader = DataLoader(ds, batch_size=8)", False),
    ],
)
def test_framework_shards_loaders(source: str, sharded: bool) -> None:
    assert framework_shards_loaders(source) is sharded


def _at_loader(statement: str) -> tuple[list[cst.CSTNode], cst.Call]:
    """The stack of the `DataLoader(...)` call in `statement`, outermost first, and its first argument."""
    line = cst.parse_statement(statement)
    assert isinstance(line, cst.SimpleStatementLine)
    small = line.body[0]
    call = small.value
    assert isinstance(call, cst.Call)
    return [line, small, call], call.args[0].value


@pytest.mark.parametrize(
    ("statement", "evaluation"),
    [
        ("val_loader = DataLoader(train_set)", True),
        ("loader = DataLoader(test_dataset)", True),
        ("self.eval_dl = DataLoader(ds)", True),
        ("train_loader = DataLoader(train_set)", False),
        ("loader = DataLoader(self.dataset)", False),
    ],
)
def test_evaluation_loader_by_its_names(statement: str, evaluation: bool) -> None:
    stack, dataset = _at_loader(statement)
    assert evaluation_loader(stack, dataset) is evaluation

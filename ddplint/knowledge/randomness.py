"""Randomness: random functions and layers, seeders, random splits.

Data, no logic, no LibCST: the prefilter imports the knowledge for every file.
"""

from __future__ import annotations



#: Text without which a module's functions and classes bring no per-rank
#: randomness that other modules need to know of (a project fact): a model
#: put in train mode and stepped, or noise drawn (`seeding.draws_noise`).
#: Text of noise drawn in a module function (a fact only outside classes:
#: `nn.Parameter(torch.randn(...))` in a model's `__init__` is no draw per rank).
NOISE_TEXT = ("randn", "randint", "rand_like")

#: Text of a trainer: a model put in train mode and optimisation steps taken.
TRAIN_MODE_TEXT = (".train(",)

STEP_TEXT = (".backward(", ".step(")

#: torch.nn layers that draw random numbers in train mode.
RANDOM_NN_LAYERS = frozenset({
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "RReLU",
})  # fmt: skip

#: torch.nn layers whose `dropout` argument defaults to a non-zero rate (0.1).
DROPOUT_BY_DEFAULT = frozenset({"Transformer", "TransformerEncoderLayer", "TransformerDecoderLayer"})

#: torch.nn.functional calls (and torch's own) that draw in training.
RANDOM_FUNCTIONS = frozenset({
    "torch.nn.functional.dropout", "torch.nn.functional.dropout1d", "torch.nn.functional.dropout2d",
    "torch.nn.functional.dropout3d", "torch.nn.functional.alpha_dropout", "torch.nn.functional.feature_alpha_dropout",
    "torch.nn.functional.rrelu", "torch.nn.functional.gumbel_softmax", "torch.dropout", "torch.alpha_dropout",
    "torch.feature_dropout", "torch.feature_alpha_dropout", "torch.rrelu",
})  # fmt: skip

#: Names of layers and helpers that draw in training whoever defines them
#: (`DropPath`, timm's `drop_path`, torchvision's `StochasticDepth`), and
#: keyword arguments that set a dropout rate (`dropout=`, `drop_rate=`,
#: `attn_pdrop=`, `hidden_dropout_prob=`, `dropout_p=`): a rate other than a
#: literal zero may draw.
RANDOM_LAYER_NAME = r"(?i:drop_?(?:out|path|rate|_prob|_p\b))|(?i:pdrop)|StochasticDepth|\bstochastic_depth\b"

#: Train/validation splits drawn from a global generator unless given a seed
#: (the keywords that seed them): torch's `random_split` draws from torch's
#: generator, scikit-learn's `train_test_split` from NumPy's.
RANDOM_SPLITS = {
    "torch.utils.data.random_split": ("torch", ("generator",)),
    "torch.utils.data.dataset.random_split": ("torch", ("generator",)),
    "sklearn.model_selection.train_test_split": ("numpy", ("random_state",)),
    "sklearn.model_selection._split.train_test_split": ("numpy", ("random_state",)),
    "sklearn.cross_validation.train_test_split": ("numpy", ("random_state",)),
}  # fmt: skip

#: Draws of an index permutation from a global generator (`random.shuffle`,
#: `np.random.shuffle`: in place) -> the generator.
PERMUTATION_DRAWS = {
    "numpy.random.permutation": "numpy", "numpy.random.shuffle": "numpy", "torch.randperm": "torch",
    "random.shuffle": "random",
}  # fmt: skip

#: Calls that cut an array into parts (`np.split(perm, [n])`).
ARRAY_SPLITS = frozenset({"numpy.split", "numpy.array_split", "torch.split", "torch.tensor_split"})

#: Collectives that hand one rank's objects to all (the split made on rank 0, then shared).
BROADCASTS = frozenset({"broadcast_object_list", "broadcast", "broadcast_object"})

#: Values that are the same on every rank of a job (names, and calls by qualified name).
UNIFORM_NAMES = frozenset({"world_size", "num_processes", "num_replicas", "n_gpu", "num_gpus", "ngpus", "nprocs"})

UNIFORM_CALLS = frozenset({"torch.distributed.get_world_size", "torch.cuda.device_count"})

#: Tensor parallelism needs identical inputs and dropout masks within a group.
TENSOR_PARALLEL = "torch.distributed.tensor.parallel"

#: Variables that hold the global rank (a local rank repeats on every node).
GLOBAL_RANK_NAMES = ("rank", "global_rank", "world_rank", "RANK")

#: accelerate's seeder, which takes `device_specific=True` to add the process index itself.
ACCELERATE_SET_SEED = frozenset({"accelerate.utils.set_seed", "accelerate.utils.random.set_seed"})

#: Random generator objects a program may create and own (not the global ones).
GENERATOR_CLASSES = frozenset(
    {
        "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator",
        "random.Random", "torch.Generator", "torch._C.Generator",
    }
)  # fmt: skip

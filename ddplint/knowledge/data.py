"""Datasets and samples: what a Dataset holds and returns, collates, images, tables, streams.

Data, no logic, no LibCST: the prefilter imports the knowledge for every file.
"""

from __future__ import annotations



#: pandas calls that build a DataFrame: its text columns are object arrays,
#: one Python object per cell, each with a reference count a read writes.
PANDAS_FRAMES = frozenset(
    {
        "pandas.read_csv", "pandas.read_table", "pandas.read_json", "pandas.read_parquet", "pandas.read_pickle",
        "pandas.read_excel", "pandas.read_feather", "pandas.read_sql", "pandas.DataFrame", "pandas.concat",
        "pandas.merge",
    }
)  # fmt: skip

#: Row and cell indexers of a DataFrame (`df.iloc[idx]`).
FRAME_INDEXERS = frozenset({"iloc", "loc", "at", "iat"})

#: A column's (or frame's) NumPy array: an object array for text columns.
FRAME_ARRAYS = frozenset({"values", "to_numpy", "array"})

#: Words of column names that hold text (paths, captions): object arrays.
TEXT_COLUMN_WORDS = ("path", "file", "name", "text", "caption", "url", "image", "img", "sentence", "prompt", "question", "answer", "video", "audio", "wav")

#: List methods that grow a list with the items of another (`samples.extend(glob(...))`).
LIST_GROWERS = frozenset({"extend"})

#: Sample values the default DataLoader collate cannot batch (analysis/samples.py).
#: Calls that return a PIL image.
PIL_IMAGES = frozenset({"PIL.Image.open", "PIL.Image.fromarray", "PIL.Image.new", "PIL.Image.merge"})

#: PIL image methods that return a PIL image.
PIL_METHODS = frozenset({"convert", "resize", "crop", "rotate", "transpose", "copy", "filter", "thumbnail_copy"})

_TV = ("torchvision.transforms.", "torchvision.transforms.transforms.", "torchvision.transforms.v2.")

#: torchvision transforms that take a PIL image and give one back (without `ToTensor` the sample stays PIL).
PIL_TRANSFORMS = frozenset(
    prefix + name
    for prefix in _TV
    for name in (
        "RandomHorizontalFlip", "RandomVerticalFlip", "RandomResizedCrop", "RandomCrop", "CenterCrop", "Resize",
        "ColorJitter", "RandomRotation", "RandomAffine", "RandomGrayscale", "Grayscale", "Pad", "RandomPerspective",
        "GaussianBlur", "RandomAutocontrast", "RandomEqualize", "RandomPosterize", "RandomSolarize",
        "RandomAdjustSharpness", "RandomInvert", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix",
    )
)  # fmt: skip

#: torchvision transforms that chain the transforms listed in their first argument.
COMPOSES = frozenset(prefix + name for prefix in _TV for name in ("Compose", "RandomApply", "RandomChoice", "RandomOrder"))

#: torchvision transforms and functions that turn a PIL image into a tensor.
TO_TENSOR = frozenset(
    {prefix + name for prefix in _TV for name in ("ToTensor", "PILToTensor")}
    | {"torchvision.transforms.functional.to_tensor", "torchvision.transforms.functional.pil_to_tensor",
       "torchvision.transforms.v2.ToImage", "torchvision.transforms.v2.ToImageTensor"}
)  # fmt: skip

#: torchvision.transforms.functional calls that return a PIL image when given one.
PIL_FUNCTIONS = frozenset(
    f"torchvision.transforms.functional.{name}"
    for name in ("hflip", "vflip", "resize", "crop", "center_crop", "resized_crop", "rotate", "pad", "affine",
                 "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue", "to_grayscale")
)  # fmt: skip

#: Calls that keep a per-sample length: a tensor or array built from a ragged list is ragged.
SEQUENCE_CONSTRUCTORS = frozenset({
    "torch.tensor", "torch.as_tensor", "torch.LongTensor", "torch.Tensor", "torch.FloatTensor", "torch.IntTensor",
    "numpy.array", "numpy.asarray", "builtins.list",
})  # fmt: skip

#: Methods of a ragged tensor or tokenizer output that keep it ragged.
RAGGED_METHODS = frozenset({"squeeze", "flatten", "long", "int", "float", "to", "clone", "ids", "input_ids"})

#: Tokenizer methods that encode one text to its own length (unless padded to a fixed one).
TOKENIZER_METHODS = frozenset({"encode", "encode_plus", "__call__"})

#: Calls that give a number.
NUMBER_CALLS = frozenset({"builtins.int", "builtins.float", "builtins.len", "builtins.round"})

#: `dtype=` values that make an object array.
OBJECT_DTYPES = frozenset({"builtins.object", "numpy.object_", "numpy.object"})

#: The default collate itself, passed explicitly.
DEFAULT_COLLATES = frozenset({"torch.utils.data.default_collate", "torch.utils.data._utils.collate.default_collate",
                              "torch.utils.data.dataloader.default_collate"})  # fmt: skip

#: Dataset wrappers whose samples are their first argument's (`Subset(dataset, indices)`).
DATASET_WRAPPERS = frozenset({"torch.utils.data.Subset", "torch.utils.data.dataset.Subset"})

#: Words of names (and of environment keys) that show code reading its rank or
#: the number of ranks: `get_rank`, `world_size`, `num_replicas`, `shard_id`,
#: `split_dataset_by_node`, webdataset's `split_by_node`, `os.environ["RANK"]`.
RANK_READ_WORDS = frozenset({
    "rank", "ranks", "world", "replica", "replicas", "shard", "shards", "sharded", "sharding", "node", "nodes",
    "processes", "hvd", "horovod",
})  # fmt: skip

#: Hugging Face `datasets` loaders that stream with `streaming=True`.
HF_LOAD_DATASET = frozenset({"datasets.load_dataset", "datasets.load.load_dataset"})

#: Methods of a Hugging Face dataset that return another dataset over the same stream.
HF_DATASET_METHODS = frozenset({
    "map", "filter", "shuffle", "take", "skip", "with_format", "rename_column", "rename_columns",
    "remove_columns", "select_columns", "cast", "cast_column", "batch", "add_column",
})  # fmt: skip

#: Calls that return a stream (an IterableDataset a sampler cannot split), by their own name.
STREAM_FACTORIES = frozenset({"split_dataset_by_node", "WebDataset", "WebLoader", "DataPipeline", "StreamingDataset", "to_iterable_dataset"})

#: Calls that build a (large) Python list or dict of objects.
PYTHON_CONTAINER_CALLS = frozenset(
    {
        "json.load", "json.loads", "pickle.load", "pickle.loads", "yaml.safe_load", "yaml.load",
        "yaml.full_load", "yaml.unsafe_load", "glob.glob", "os.listdir",
    }
)  # fmt: skip

#: Calls whose result iterates as Python rows (lines, CSV rows): `list(open(path))`.
ROW_READERS = frozenset({"builtins.open", "csv.reader", "csv.DictReader"})

#: Methods whose result is a Python list or dict.
PYTHON_CONTAINER_METHODS = frozenset({"readlines", "tolist", "to_dict", "to_list", "splitlines"})

#: Wrappers that keep a Python container a Python container.
CONTAINER_PASS_THROUGH = frozenset({"builtins.sorted", "builtins.list", "builtins.tuple", "builtins.dict", "builtins.set"})

#: Iterators whose items are Python tuples (`list(zip(paths, labels))`).
TUPLE_ITERATORS = frozenset({"builtins.zip", "builtins.enumerate", "builtins.map"})

#: DataFrame methods that return a DataFrame again (`df.reset_index()`).
FRAME_PRESERVING_METHODS = frozenset({"reset_index", "dropna", "sample", "copy", "query"})

#: Calls that return every core of the node.
CPU_COUNTS = frozenset(
    {
        "os.cpu_count", "multiprocessing.cpu_count", "torch.multiprocessing.cpu_count", "psutil.cpu_count",
        "multiprocessing.context.BaseContext.cpu_count",
    }
)  # fmt: skip

#: Calls whose `len(...)` is the cores this process may run on (`len(os.sched_getaffinity(0))`).
CPU_SETS = frozenset({"os.sched_getaffinity"})

#: Code that hands a module's loaders to a framework that splits them across
#: processes (a regular expression): accelerate's `prepare`, the Hugging Face Trainers.
LOADER_SHARDING_FRAMEWORKS = r"accelerat\w*\.prepare\(|\bprepare_data_loader\(|\b(?:Seq2Seq|SFT)?Trainer\("

#: Callables that iterate the loader they are given (`enumerate(loader)`), by qualified name.
ITERATING_CALLS = frozenset({"builtins.iter", "builtins.enumerate", "builtins.zip", "itertools.islice", "itertools.cycle"})

#: Progress bars and slicers that iterate the loader they wrap, by their own name (`tqdm(loader)`).
ITERATING_WRAPPERS = frozenset({"tqdm", "trange", "track", "islice"})

#: What a module must mention to build a loader over a `DistributedSampler`
#: (`ElasticDistributedSampler`, ColossalAI's `plugin.prepare_dataloader`).
DISTRIBUTED_SAMPLER_TEXTS = ("DistributedSampler", "ElasticDistributedSampler", "prepare_dataloader")

#: Parts of a loader's or dataset's name (any case) that say it trains, or that it evaluates (`val_loader`, `test_set`).
TRAINING_NAME_PARTS = ("train",)

EVALUATION_NAME_PARTS = ("val", "eval", "test")
#: The same parts as a regular expression (any case).
EVALUATION_NAMES = "(?i)" + "|".join(EVALUATION_NAME_PARTS)

#: Lightning's DataLoader hooks: the Trainer inserts the DistributedSampler into the loaders they return.
LIGHTNING_LOADER_HOOKS = frozenset({"train_dataloader", "val_dataloader", "test_dataloader", "predict_dataloader"})

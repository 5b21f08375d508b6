"""Where writes go: file writers, checkpointers, paths, locks, state dicts, downloads.

Data, no logic, no LibCST: the prefilter imports the knowledge for every file.
"""

from __future__ import annotations



#: Constructors of in-memory streams: `torch.save(obj, io.BytesIO())` serialises
#: into memory (to send the bytes to other ranks), no file is written.
IN_MEMORY_STREAMS = frozenset({"io.BytesIO", "io.StringIO", "_io.BytesIO", "_io.StringIO"})

#: The null device: a write there writes no file (`open(os.devnull, "w")` to silence output).
NULL_DEVICES = frozenset({"os.devnull"})

#: Cross-process file locks: writes inside `with FileLock(path):` are serialised on purpose.
FILE_LOCKS = frozenset({"filelock.FileLock", "filelock.SoftFileLock", "filelock.UnixFileLock", "filelock.WindowsFileLock"})

#: Calls that create a fresh temporary file or directory for the calling
#: process (a random name per call): a path under one is the process's own.
TEMPORARY_PATHS = frozenset({
    "tempfile.mkdtemp", "tempfile.mkstemp", "tempfile.TemporaryDirectory", "tempfile.NamedTemporaryFile",
    "tempfile.TemporaryFile", "tempfile.SpooledTemporaryFile",
})  # fmt: skip

#: Calls and methods whose result is a path that keeps every part of its
#: arguments (a unique part keeps it unique); `os.path.dirname` does not.
PATH_BUILDERS = frozenset({
    "os.path.join", "os.path.abspath", "os.path.expanduser", "os.path.normpath", "os.path.realpath",
    "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "builtins.str", "os.fspath",
})  # fmt: skip

PATH_BUILDER_METHODS = frozenset({"joinpath", "format", "with_suffix", "resolve", "absolute", "expanduser"})

_FSDP_API = ("torch.distributed.fsdp", "torch.distributed.fsdp.api", "torch.distributed.fsdp.fully_sharded_data_parallel")

#: `StateDictType.FULL_STATE_DICT`, as FSDP1 exports it.
FULL_STATE_DICT = frozenset(f"{m}.StateDictType.FULL_STATE_DICT" for m in _FSDP_API)

FULL_STATE_DICT_CONFIG = frozenset(f"{m}.FullStateDictConfig" for m in _FSDP_API)

#: `FSDP.state_dict_type(module, type, config)` and `FSDP.set_state_dict_type(...)`.
STATE_DICT_TYPE_SETTERS = frozenset(
    f"{m}.{cls}.{method}" for m in ("torch.distributed.fsdp", "torch.distributed.fsdp.fully_sharded_data_parallel")
    for cls in ("FullyShardedDataParallel",) for method in ("state_dict_type", "set_state_dict_type")
)  # fmt: skip

STATE_DICT_OPTIONS = frozenset({"torch.distributed.checkpoint.state_dict.StateDictOptions"})

#: The calls (by their own name) that may request a full state dict.
STATE_DICT_REQUESTS = frozenset({"state_dict", "state_dict_type", "set_state_dict_type", "StateDictOptions"})

#: What a full state dict needs so that one rank, not every GPU, holds the whole model.
FULL_STATE_DICT_SAFE = {"FullStateDictConfig": ("offload_to_cpu", "rank0_only"), "StateDictOptions": ("cpu_offload",)}

#: Checkpointer classes whose `save(name)` writes `<save_dir>/<name>.pth` on
#: every process that calls it, unless built with `save_to_disk` false (or no
#: `save_dir`): class -> whether `save_to_disk` defaults to true. fvcore's
#: `Checkpointer` (re-exported by detectron2.checkpoint) checks no rank, its
#: default is true; detectron2's `DetectionCheckpointer` defaults it to
#: `comm.is_main_process()`, so only an explicit `save_to_disk=True` writes on every rank.
CHECKPOINTERS = {
    "fvcore.common.checkpoint.Checkpointer": True,
    "detectron2.checkpoint.Checkpointer": True,
    "detectron2.checkpoint.DetectionCheckpointer": False,
    "detectron2.checkpoint.detection_checkpoint.DetectionCheckpointer": False,
}

#: Wrappers that save through the checkpointer they are built with (first
#: argument, `checkpointer=`): `step(iteration)` every `period`, `save(name)`.
PERIODIC_CHECKPOINTERS = frozenset({"fvcore.common.checkpoint.PeriodicCheckpointer", "detectron2.checkpoint.PeriodicCheckpointer"})

#: The checkpointers' writing methods: (periodic wrapper?) -> names.
CHECKPOINTER_SAVES = frozenset({"save"})

PERIODIC_SAVES = frozenset({"save", "step"})

#: Calls that write or read a path (`analysis.file_io`), each mapped to the
#: argument holding the path: a position, `-1` the object read
#: (`json.load(open(p))`), `-2` the receiver (`Path(p).write_text(...)`).
#: Writes (or preparations: `os.makedirs`) by call -> index of the path argument.
WRITES = {
    "torch.save": 1, "numpy.save": 0, "numpy.savez": 0, "os.makedirs": 0, "os.mkdir": 0,
    "shutil.copy": 1, "shutil.copyfile": 1, "shutil.copytree": 1, "shutil.move": 1,
    "urllib.request.urlretrieve": 1,
}  # fmt: skip

WRITE_METHODS = {"save_pretrained": 0, "save_to_disk": 0, "to_csv": 0, "to_json": 0, "to_parquet": 0,
                 "extractall": 0, "write_text": -2, "write_bytes": -2}  # fmt: skip

READS = {"torch.load": 0, "numpy.load": 0, "os.listdir": 0, "glob.glob": 0, "datasets.load_from_disk": 0,
         "datasets.load_dataset": 0, "pandas.read_csv": 0, "json.load": -1}  # fmt: skip

READ_METHODS = {"from_pretrained": 0, "load_from_disk": 0, "read_text": -2, "read_bytes": -2}

#: Where a write puts its bytes: call -> (position, keyword) of the file or
#: stream argument; methods -> the same, `-2` the receiver.
DESTINATIONS = {
    "torch.save": (1, "f"), "torch.jit.save": (1, "f"), "numpy.save": (0, "file"), "numpy.savez": (0, "file"),
    "numpy.savez_compressed": (0, "file"), "builtins.open": (0, "file"), "io.open": (0, "file"),
    "codecs.open": (0, "filename"), "safetensors.torch.save_file": (1, "filename"),
    "safetensors.numpy.save_file": (1, "filename"), "shutil.copy": (1, "dst"), "shutil.copy2": (1, "dst"),
    "shutil.copyfile": (1, "dst"), "shutil.copytree": (1, "dst"), "shutil.move": (1, "dst"),
}  # fmt: skip

DESTINATION_METHODS = {"save_pretrained": (0, "save_directory"), "write_text": (-2, ""), "write_bytes": (-2, "")}

#: Functions that open a file; the mode letters that make it a write.
OPEN_FUNCTIONS = frozenset({"builtins.open", "io.open", "codecs.open"})

#: Functions that write a file, by qualified name; methods that write one on any receiver.
FILE_WRITE_FUNCTIONS = frozenset(DESTINATIONS) - OPEN_FUNCTIONS

FILE_WRITE_METHODS = frozenset(DESTINATION_METHODS)

WRITE_MODES = frozenset("wax+")

#: Dataset packages whose constructors download with `download=True`.
DATASET_PACKAGES = ("torchvision.datasets.", "torchaudio.datasets.", "torchtext.datasets.")

#: Calls that fetch a file into a local path.
DOWNLOADS = frozenset(
    {
        "urllib.request.urlretrieve", "wget.download", "gdown.download", "gdown.download_folder",
        "torch.hub.download_url_to_file", "torchvision.datasets.utils.download_url",
        "torchvision.datasets.utils.download_and_extract_archive", "torchvision.datasets.utils.download_file_from_google_drive",
    }
)  # fmt: skip

#: Helpers that download by name, whichever module defines them (BLIP's `download_url`).
DOWNLOAD_NAMES = frozenset({"download_url", "download_and_extract_archive", "urlretrieve", "download_file"})

#: Calls that run a command line, and the tools that download to a file.
SHELL_CALLS = frozenset(
    {"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output", "subprocess.Popen",
     "os.system"}
)  # fmt: skip

DOWNLOAD_TOOLS = ("wget", "gdown")

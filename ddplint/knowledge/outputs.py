"""What a process prints or logs: printers, loggers, trackers, progress bars and their silencers.

Data, no logic, no LibCST: the prefilter imports the knowledge for every file.
"""

from __future__ import annotations



#: What replaces `print` for the whole process when assigned (MoCo's
#: `builtins.print = print_pass`, Python 2's `__builtin__`); `__builtins__`
#: is the module's own reference to it (`__builtins__.print = ...`, or its
#: dict: `__builtins__["print"] = ...`).
PRINT_TARGETS = frozenset({"builtins.print", "__builtin__.print"})

BUILTINS_MODULES = frozenset({"builtins", "__builtin__"})

#: Calls that configure what a `logging` logger emits: under a rank test (or
#: given a rank-dependent level), the logger speaks on some ranks only.
LOGGING_CONFIGURATION = frozenset({"addHandler", "setLevel", "addFilter", "basicConfig"})

#: Writers and runs that each rank that calls them creates once more: a
#: duplicated run or event file even when called once.
OUTPUT_WRITERS = frozenset(
    {
        "wandb.init", "mlflow.start_run", "torch.utils.tensorboard.SummaryWriter",
        "torch.utils.tensorboard.writer.SummaryWriter", "tensorboardX.SummaryWriter", "logging.FileHandler",
    }
)  # fmt: skip

#: Output that repeats when it runs in the training loop (or what it calls);
#: and the prefixes of the experiment trackers' logging functions.
REPEATED_OUTPUT = frozenset({"builtins.print", "wandb.log"})

TRACKER_LOG_PREFIXES = ("mlflow.log_",)

#: Per-process values: output that prints them is per rank on purpose.
PER_PROCESS_VALUES = frozenset({"os.getpid", "torch.cuda.current_device", "socket.gethostname", "platform.node"})

#: Words a module must contain to mention one of `PER_PROCESS_VALUES` (a cheap filter).
PER_PROCESS_WORDS = ("getpid", "current_device", "gethostname", "node(")

PROGRESS_BARS = frozenset(
    {
        "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm", "tqdm.rich.tqdm",
        "tqdm.trange", "tqdm.auto.trange", "tqdm.notebook.trange",
    }
)  # fmt: skip

#: The keyword of a progress bar that switches it off.
PROGRESS_DISABLE = "disable"

#: Methods of a `logging`/loguru logger that emit a record; those that report a problem.
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})

ERROR_LOG_METHODS = frozenset({"error", "exception", "critical"})

WARNING_LOG_METHODS = frozenset({"warning", "warn"})

#: Logger factories: `logging`'s (by last name), and those whose loggers log on the main process only.
LOGGER_FACTORIES = frozenset({"getLogger", "get_logger"})

RANK_AWARE_LOGGER_FACTORIES = frozenset({"accelerate.logging.get_logger"})

#: Helpers that replace `builtins.print` with a rank-0-only version (DETR,
#: DeiT, MAE, torchvision's references: `utils.init_distributed_mode(args)`).
PRINT_SILENCERS = frozenset({"init_distributed_mode", "setup_for_distributed"})

#: Names of functions that set up logging (a regular expression); given the rank, they set it up per rank.
LOGGER_SETUP = r"^(?:setup|set_up|create|init|build|get|make)_?(?:logging|logger)s?$"

#: A keyword that names the ranks a logger call emits on (ColossalAI's `logger.info(msg, ranks=[0])`).
RANKS_KEYWORDS = frozenset({"ranks", "rank", "main_process_only"})

#: Words of the output calls, for the prefilter (logger receivers are named freely: `logger`, `LOGGER`).
OUTPUT_WORDS = ("print", "wandb", "SummaryWriter", "mlflow", "tqdm", "trange", "logger", "logging", "log",
                "loguru", "LOGGER", "FileHandler")  # fmt: skip

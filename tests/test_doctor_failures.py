"""`ddplint doctor` when things go wrong, on real processes (issue 23): a rank
that cannot join fails loudly and on time whatever the peer does, local ranks
never import the working directory's modules, a broken torch install says what
broke, and bad selections or platforms are refused or handled."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import assert_valid_sarif
from test_doctor import check, doctor, finding, free_port

#: --timeout of the joining tests: a rank must give up within a few times this
#: (startup of a Python process that imports torch included).
TIMEOUT = 3
#: What a joining test may take before it counts as hung (the subprocess is killed).
HUNG = 60


@contextmanager
def peer(kind: str) -> Iterator[int]:
    """A port on loopback where nothing listens ("nothing"), where a server
    accepts connections and never answers ("stall"), or where it answers
    every connection with bytes that are no store's ("junk")."""
    if kind == "nothing":
        yield free_port()
        return
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.1)
    stop = threading.Event()
    connections: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            connections.append(connection)  # kept open: a stalled peer holds the connection
            if kind == "junk":
                try:
                    connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" * 8)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        for connection in connections:
            connection.close()
        server.close()


def rank_one(port: int) -> dict[str, str]:
    """The variables a launcher sets for rank 1 of 2 whose rank 0 is at `port`."""
    return {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}  # fmt: skip


@pytest.mark.parametrize("kind", ["nothing", "stall", "junk"])
def test_a_rank_that_cannot_join_says_so_and_fails_within_the_timeout(tmp_path: Path, kind: str) -> None:
    with peer(kind) as port:
        started = time.monotonic()
        run = doctor("--timeout", TIMEOUT, "--format", "json", "--output", tmp_path / "r{rank}.json",
                     env=rank_one(port), timeout=HUNG)  # fmt: skip
        elapsed = time.monotonic() - started
    assert run.status == 1, (run.stdout, run.stderr)
    assert elapsed < 3 * TIMEOUT + 3, elapsed  # 3 s for the interpreter and torch to start
    [verdict] = run.stdout.splitlines()
    assert verdict.startswith("ddplint doctor: rank 1 of 2 ") and "could not join" in verdict, verdict
    assert f"127.0.0.1:{port}" in verdict
    # torch's C++ log is summarised, not dumped
    assert "frame #" not in run.stderr and len(run.stderr.splitlines()) <= 2, run.stderr
    report = json.loads((tmp_path / "r1.json").read_text())
    assert report["world_size"] == 2  # the launcher's, not a fallback
    assert [row["rank"] for row in report["ranks"]] == [1]
    unreachable = finding(report, "RT003")
    assert unreachable["message"].startswith(f"could not reach the rendezvous store at 127.0.0.1:{port}")
    assert unreachable["properties"]["ranks"] == [1]


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_a_rank_that_cannot_join_writes_the_requested_report(tmp_path: Path, fmt: str, sarif_validator) -> None:
    # --output without {rank}: rank 0 writes the job's report there, but a rank
    # that never reached rank 0 is in nobody's report unless it writes its own
    # (issue 33: no file was written at all).
    output = tmp_path / f"doctor.{fmt}"
    with peer("nothing") as port:
        run = doctor("--timeout", TIMEOUT, "--format", fmt, "--output", output, env=rank_one(port), timeout=HUNG)
    assert run.status == 1, (run.stdout, run.stderr)
    [verdict] = run.stdout.splitlines()
    assert "could not join (RT003)" in verdict and verdict.endswith(f"; report in {output}"), verdict
    log = json.loads(output.read_text())
    if fmt == "json":
        message = finding(log, "RT003")["message"]
    else:
        assert_valid_sarif(sarif_validator, log)
        [result] = [r for r in log["runs"][0]["results"] if r["ruleId"] == "RT003"]
        assert result["level"] == "error" and result["locations"]
        message = result["message"]["text"]
    assert message.startswith(f"could not reach the rendezvous store at 127.0.0.1:{port}"), message
    assert not list(tmp_path.glob(".*.tmp"))  # written whole, through a renamed temporary file


def test_the_verdict_of_rank_0_names_the_failing_check(tmp_path: Path) -> None:
    with peer("stall") as port:  # rank 0 cannot host the store
        env = {**rank_one(port), "RANK": "0", "LOCAL_RANK": "0"}
        run = doctor("--timeout", TIMEOUT, "--backend", "gloo", "--only", "RT003", "--output", tmp_path / "r.txt",
                     env=env, timeout=HUNG)  # fmt: skip
    assert run.status == 1, run.stderr
    assert run.stdout.strip() == f"ddplint doctor: 2 ranks (gloo): 1 problem found (RT003); report in {tmp_path / 'r.txt'}"


def test_rank_0_that_cannot_host_the_store_says_why() -> None:
    with peer("stall") as port:  # another program holds MASTER_PORT
        env = {**rank_one(port), "RANK": "0", "LOCAL_RANK": "0"}
        run = doctor("--timeout", TIMEOUT, "--format", "json", env=env, timeout=HUNG)
    assert run.status == 1, run.stderr
    message = finding(run.json(), "RT003")["message"]
    assert message.startswith(f"could not host the rendezvous store at 127.0.0.1:{port}: ") and "EADDRINUSE" in message


def test_the_cpp_log_of_a_failed_join_is_shown_whole_with_debug() -> None:
    with peer("junk") as port:
        quiet = doctor("--timeout", TIMEOUT, env=rank_one(port), timeout=HUNG)
        loud = doctor("--timeout", TIMEOUT, "--debug", env=rank_one(port), timeout=HUNG)
    assert quiet.status == loud.status == 1
    assert "[c10d]" in quiet.stderr and "--debug" in quiet.stderr  # the summary names its first message
    assert loud.stderr.count("[c10d]") >= 2 and "Exception raised from" in loud.stderr, loud.stderr


def test_a_rank_that_joins_prints_its_verdict_and_leaves_the_report_to_rank_0(tmp_path: Path) -> None:
    run = doctor("--nproc-per-node", "2", "--backend", "gloo", "--only", "RT003", "--format", "json",
                 "--output", tmp_path / "report.json")  # fmt: skip
    assert run.status == 0, run.stderr
    [verdict] = run.stdout.splitlines()  # rank 0's: its report went to the file
    assert verdict.startswith("ddplint doctor: 2 ranks") and "report.json" in verdict, verdict
    assert json.loads((tmp_path / "report.json").read_text())["world_size"] == 2


def test_local_ranks_do_not_import_modules_from_the_working_directory(tmp_path: Path) -> None:
    for name in ("json", "random", "numpy", "typing_extensions"):
        (tmp_path / f"{name}.py").write_text(
            f"open({str(tmp_path / ('imported-' + name))!r}, 'w').close()\nraise SystemExit('shadowed {name}')\n"
        )
    run = doctor("--nproc-per-node", "2", "--backend", "gloo", "--only", "RT003,RT008", "--format", "json",
                 cwd=tmp_path)  # fmt: skip
    assert sorted(p.name for p in tmp_path.glob("imported-*")) == []
    assert run.status == 0, run.stderr
    assert check(run.json(), "RT003")["status"] == "pass"


def test_a_probe_still_imports_the_users_module_from_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "my_data.py").write_text(
        "import torch\nfrom torch.utils.data import TensorDataset\n\n"
        "def build():\n    return TensorDataset(torch.zeros(64, 4))\n"
    )
    run = doctor("--nproc-per-node", "2", "--backend", "gloo", "--only", "RT006", "--dataset", "my_data:build",
                 "--num-workers", "1", "--batch-size", "8", "--format", "json", cwd=tmp_path)  # fmt: skip
    assert run.status in (0, 1), run.stderr
    assert check(run.json(), "RT006")["status"] != "error"


def fake_torch(root: Path, body: str) -> dict[str, str]:
    """A `torch` package whose import runs `body`, first on PYTHONPATH."""
    (root / "torch").mkdir(parents=True)
    (root / "torch" / "__init__.py").write_text(body)
    return {"PYTHONPATH": str(root)}


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        # a wheel built for another CUDA: the shared library is missing
        ("raise OSError('libcudnn.so.9: cannot open shared object file: No such file or directory')\n",
         "cannot import torch: OSError: libcudnn.so.9: cannot open shared object file"),
        # torch is there but one of its own dependencies is not
        ("import sympy_is_not_installed\n",
         "cannot import torch: ModuleNotFoundError: No module named 'sympy_is_not_installed'"),
        # a library that does not match the one torch was built against
        ("raise ImportError('libtorch_cuda.so: undefined symbol: ncclCommWindowRegister')\n",
         "cannot import torch: ImportError: libtorch_cuda.so: undefined symbol: ncclCommWindowRegister"),
    ],
)
def test_a_broken_torch_install_says_what_failed(tmp_path: Path, body: str, shown: str) -> None:
    env = fake_torch(tmp_path / "site", body)
    run = doctor("--nproc-per-node", "1", env=env, cwd=tmp_path, timeout=HUNG)
    assert run.status == 2
    assert run.stderr.strip().splitlines() == [run.stderr.strip()], run.stderr
    assert shown in run.stderr and "pip install 'ddplint[runtime]'" not in run.stderr, run.stderr
    debug = doctor("--nproc-per-node", "1", "--debug", env=env, cwd=tmp_path, timeout=HUNG)
    assert debug.status == 2 and "Traceback" in debug.stderr and shown in debug.stderr, debug.stderr


def test_without_psutil_doctor_names_it_in_the_install_hint(tmp_path: Path) -> None:
    code = "import sys; sys.modules['psutil'] = None; from ddplint.cli import main; sys.exit(main(['doctor']))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HUNG, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "ddplint: error: ddplint doctor needs psutil: pip install 'ddplint[runtime]'"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--only", "RT099"), "--only: unknown check 'RT099' (known: RT001, RT002,"),
        (("--skip", "RT01"), "--skip: unknown check 'RT01' (known: RT001, RT002,"),
    ],
)
def test_an_unknown_check_code_is_a_usage_error(args: tuple[str, ...], message: str) -> None:
    run = doctor("--nproc-per-node", "1", *args)
    assert run.status == 2
    assert run.stdout == ""
    assert run.stderr.strip().splitlines() == [run.stderr.strip()] and message in run.stderr, run.stderr
    assert "RT008)" in run.stderr


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"RANK": "x", "WORLD_SIZE": "2"}, "RANK='x': expected a whole number"),
        ({"RANK": "2", "WORLD_SIZE": "2"}, "RANK=2 WORLD_SIZE=2: the rank must be below the world size"),
    ],
)
def test_launcher_variables_that_are_no_rank_are_a_usage_error(env: dict[str, str], message: str) -> None:
    run = doctor("--timeout", TIMEOUT, env=env, timeout=HUNG)
    assert run.status == 2 and run.stdout == ""
    assert run.stderr.strip().splitlines() == [run.stderr.strip()] and message in run.stderr, run.stderr


def test_gitlab_is_not_a_doctor_format() -> None:
    run = doctor("--nproc-per-node", "1", "--format", "gitlab")
    assert run.status == 2 and run.stdout == ""
    assert "'gitlab' is not one of 'text', 'json', 'sarif', 'github'" in run.stderr, run.stderr
    assert "gitlab" not in doctor("--help").stdout


def test_pinned_memory_is_skipped_with_a_note_where_nothing_is_pinned() -> None:
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this host pins memory: the budget applies (tests/test_doctor.py)")
    run = doctor("--nproc-per-node", "1", "--only", "RT005", "--batch-bytes", "64GiB", "--num-workers", "8",
                 "--format", "json")  # fmt: skip
    assert run.status == 0, run.stdout
    [result] = check(run.json(), "RT005")["results"]
    assert result["status"] == "skip"
    assert "without CUDA" in result["summary"] and "1024.0 GiB" in result["summary"], result["summary"]


def test_the_doctor_imports_without_posix_only_modules() -> None:
    code = (
        "import sys; sys.modules['resource'] = None\n"
        "import ddplint.cli.doctor, ddplint.runtime.session, ddplint.runtime.launch, ddplint.runtime.host\n"
        "from ddplint.runtime.check import all_checks\n"
        "from ddplint.runtime.host import memlock_limit\n"
        "print(len(all_checks()), memlock_limit())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HUNG)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["8", "None"]

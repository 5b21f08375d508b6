"""`ddplint doctor` (SPEC §3) on real processes: gloo process groups of
several ranks, torchrun, a rank that never arrives, real DataLoader workers
and real training steps for the probes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, Run, assert_valid_sarif, console_script

PROBES = REPO / "tests" / "probes"
#: A doctor run that needs this much longer than its own timeouts has hung.
HARD_KILL = 120


def doctor(*args: str, cwd: Path = REPO, env: dict | None = None, timeout: float = HARD_KILL) -> Run:
    """The installed console script: `ddplint doctor ARGS` in a subprocess."""
    proc = subprocess.run(
        [console_script(), "doctor", *map(str, args)],
        cwd=cwd, capture_output=True, timeout=timeout, env={**os.environ, **(env or {})},
    )  # fmt: skip
    return Run(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def check(report: dict, code: str) -> dict:
    return next(c for c in report["checks"] if c["code"] == code)


def finding(report: dict, code: str) -> dict:
    found = [f for f in report["findings"] if f["rule"] == code]
    assert len(found) == 1, report["findings"]
    return found[0]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_two_local_ranks_pass_the_handshake_and_report_once() -> None:
    run = doctor("--backend", "gloo", "--nproc-per-node", "2", "--format", "json")
    assert run.status == 0, run.stderr
    report = json.loads(run.stdout)  # one report: rank 1 wrote nothing to stdout
    assert [(r["rank"], r["local_rank"], r["reported"]) for r in report["ranks"]] == [(0, 0, True), (1, 1, True)]
    assert all(r["hostname"] == socket.gethostname() and r["device"] == "cpu" for r in report["ranks"])
    handshake = check(report, "RT003")
    assert handshake["status"] == "pass"
    assert handshake["results"][0]["ranks"] == [0, 1]
    assert report["environment"]["torch"].startswith("2.")


def test_text_report_is_a_checklist_with_a_row_per_rank() -> None:
    run = doctor("--backend", "gloo", "--nproc-per-node", "2", "--num-workers", "1")
    assert run.status == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("ddplint doctor: 2 ranks on ")
    assert any(line.startswith("  ✓ RT003 process-group-handshake") and "2 ranks on gloo" in line for line in lines)
    assert any(line.startswith("  ✓ RT004 cpu-oversubscription") and "1 worker × 2 local ranks = 2 ≤" in line for line in lines)
    assert any(line.startswith("  ! RT002 ") and "CPU run with gloo" in line for line in lines)
    rows = [line.split() for line in lines if line.strip()[:1].isdigit()]
    assert [row[:2] for row in rows] == [["0", "0"], ["1", "1"]]
    assert lines[-1] == "No problems found."


def test_under_torchrun_every_rank_checks_and_rank_0_reports(tmp_path: Path) -> None:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         "-m", "ddplint", "doctor", "--format", "json", "--output", str(tmp_path / "report.json")],
        cwd=tmp_path, capture_output=True, timeout=HARD_KILL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert [r["rank"] for r in report["ranks"] if r["reported"]] == [0, 1]
    assert check(report, "RT003")["status"] == "pass"
    assert report["environment"]["variables"]["MASTER_PORT"]  # the launcher's variables are recorded
    assert time.monotonic() - started < 60


def test_every_rank_writes_its_own_report_with_rank_in_the_output_name(tmp_path: Path) -> None:
    run = doctor("--nproc-per-node", "2", "--format", "json", "--output", tmp_path / "doctor-{rank}.json")
    assert run.status == 0, run.stderr
    assert run.stdout == ""
    merged = json.loads((tmp_path / "doctor-0.json").read_text())
    own = json.loads((tmp_path / "doctor-1.json").read_text())
    assert len(merged["ranks"]) == 2
    assert [r["rank"] for r in own["ranks"]] == [0]  # rank 1's own results only
    assert check(own, "RT001")["status"] == "pass"


def test_a_rank_that_never_arrives_is_named_within_the_timeout() -> None:
    env = {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}  # fmt: skip
    started = time.monotonic()
    run = doctor("--timeout", "5", "--format", "json", env=env, timeout=60)  # the hard kill fails the test
    elapsed = time.monotonic() - started
    assert run.status == 1, run.stderr
    report = json.loads(run.stdout)
    missing = finding(report, "RT003")
    assert missing["severity"] == "error"
    assert missing["message"].startswith("rank 1 of 2 did not arrive within 5 s")
    assert missing["properties"]["missing_ranks"] == [1]
    assert [(r["rank"], r["reported"]) for r in report["ranks"]] == [(0, True), (1, False)]
    assert elapsed < 5 + 10, elapsed


def test_a_store_that_cannot_be_reached_is_a_finding_not_a_hang(tmp_path: Path) -> None:
    env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}  # fmt: skip
    started = time.monotonic()
    run = doctor("--timeout", "3", "--format", "json", "--output", tmp_path / "r{rank}.json", env=env, timeout=60)
    assert run.status == 0, run.stderr  # not rank 0: never fails the launcher, the report says it
    assert time.monotonic() - started < 3 + 10
    unreachable = finding(json.loads((tmp_path / "r1.json").read_text()), "RT003")
    assert unreachable["message"].startswith("could not reach the rendezvous store at 127.0.0.1:")


@pytest.mark.parametrize(
    ("args", "code", "numbers"),
    [
        (("--shm-gib", "100000"), "RT001", ("< required 100000.0 GiB (--shm-gib)", "/dev/shm free")),
        (("--num-workers", "512"), "RT004", ("512 workers × 1 local rank = 512 >",)),
        (("--batch-bytes", "64GiB", "--num-workers", "8"), "RT005", ("1 rank × 8 workers × 2 prefetch × 64.0 GiB = 1024.0 GiB pinned > half of the",)),
    ],
)
def test_host_limits_are_findings_with_their_numbers(ddplint, args, code, numbers) -> None:
    run = ddplint("doctor", "--nproc-per-node", "1", "--only", code, "--format", "json", *args)
    assert run.status == 1, run.stderr
    found = finding(run.json(), code)
    for number in numbers:
        assert number in found["message"], found["message"]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("--shm-gib", "0.001"), "RT001"),
        (("--num-workers", "1"), "RT004"),
        (("--batch-bytes", "1MiB", "--num-workers", "1"), "RT005"),
    ],
)
def test_sane_values_pass(ddplint, args, code) -> None:
    run = ddplint("doctor", "--nproc-per-node", "1", "--only", code, "--format", "json", *args)
    assert run.status == 0, run.stdout
    assert check(run.json(), code)["status"] == "pass"
    assert run.json()["findings"] == []


def test_shm_requirement_is_derived_from_the_loader_settings(ddplint) -> None:
    run = ddplint("doctor", "--nproc-per-node", "1", "--only", "RT001", "--format", "json",
                  "--batch-bytes", "1MiB", "--num-workers", "2", "--prefetch-factor", "3")  # fmt: skip
    result = check(run.json(), "RT001")["results"][0]
    assert result["measured"]["required_bytes"] == 1 * 2 * 3 * 2**20


@pytest.mark.parametrize(("factory", "flagged"), [("python_objects", True), ("tensor_backed", False)])
def test_worker_memory_growth_probe(factory: str, flagged: bool) -> None:
    run = doctor("--nproc-per-node", "1", "--only", "RT006", "--dataset", f"doctor_targets:{factory}",
                 "--num-workers", "2", "--batch-size", "256", "--format", "json", cwd=PROBES)  # fmt: skip
    assert run.status == (1 if flagged else 0), run.stderr
    result = check(run.json(), "RT006")["results"][0]
    measured = result["measured"]
    assert measured["samples"] == 1_000_000 and measured["workers"] == 2
    assert len(measured["curve_mib"]) >= 5
    if flagged:
        assert result["status"] == "fail"
        assert measured["growth_bytes"] > 16 * 2**20 and measured["mib_per_1k_samples"] > 0.01
        assert "MiB per 1k samples" in result["summary"] and "per epoch on this node" in result["summary"]
    else:
        assert result["status"] == "pass" and measured["growth_bytes"] < 4 * 2**20


@pytest.mark.parametrize(("factory", "flagged"), [("leaking_step", True), ("clean_step", False)])
def test_memory_plateau_probe(factory: str, flagged: bool) -> None:
    run = doctor("--nproc-per-node", "1", "--only", "RT007", "--step", f"doctor_targets:{factory}",
                 "--steps", "60", "--batch-size", "16", "--format", "json", cwd=PROBES)  # fmt: skip
    assert run.status == (1 if flagged else 0), run.stderr
    result = check(run.json(), "RT007")["results"][0]
    assert result["measured"]["steps"] == 60 and result["measured"]["measure"] == "resident set size"
    assert len(result["measured"]["curve_mib"]) >= 5
    assert result["status"] == ("fail" if flagged else "pass"), result["summary"]
    if flagged:
        assert result["measured"]["last_third_growth_bytes"] > 20 * 2**20


def test_sarif_from_doctor_validates_and_carries_the_environment(ddplint, sarif_validator) -> None:
    run = ddplint("doctor", "--nproc-per-node", "1", "--format", "sarif", "--shm-gib", "100000")
    assert run.status == 1
    log = json.loads(run.stdout)
    assert_valid_sarif(sarif_validator, log)
    sarif_run = log["runs"][0]
    rules = sarif_run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [f"RT00{i}" for i in range(1, 9)]
    assert all(r["help"]["markdown"] and r["helpUri"].endswith(f"runtime-checks.md#{r['id'].lower()}-{r['name']}") for r in rules)
    shm = next(r for r in sarif_run["results"] if r["ruleId"] == "RT001")
    assert shm["level"] == "error" and shm["locations"]  # code scanning rejects a result without one
    assert shm["properties"]["free_bytes"] > 0 and shm["properties"]["required_bytes"] == 100000 * 2**30
    invocation = sarif_run["invocations"][0]
    assert invocation["executionSuccessful"] is True
    assert invocation["properties"]["environment"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert invocation["properties"]["ranks"][0]["rank"] == 0


def test_github_annotations_have_no_file(ddplint) -> None:
    run = ddplint("doctor", "--nproc-per-node", "1", "--only", "RT001", "--format", "github", "--shm-gib", "100000")
    assert run.status == 1
    assert run.stdout.startswith("::error title=RT001 shm-capacity::/dev/shm free ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--dataset", "doctor_targets"), "--dataset: expected module:factory"),
        (("--dataset", "no_such_module:build"), "--dataset: cannot import 'no_such_module': ModuleNotFoundError"),
        (("--step", "doctor_targets:nothing_here"), "--step: module 'doctor_targets' has no attribute 'nothing_here'"),
        (("--only", "DDP001"), "--only: expected a check code or prefix such as RT003"),
        (("--format", "gitlab"), "--format gitlab: Code Quality reports need file locations"),
        (("--batch-bytes", "lots"), "--batch-bytes: expected a size such as 64MiB"),
        (("--timeout", "0"), "--timeout: expected a positive number"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args, message) -> None:
    run = doctor("--nproc-per-node", "1", *args, cwd=PROBES)
    assert run.status == 2
    assert run.stdout == ""
    assert run.stderr.strip().splitlines() == [run.stderr.strip()] and message in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


def test_a_failing_factory_is_reported_and_the_traceback_needs_debug() -> None:
    args = ("--nproc-per-node", "1", "--only", "RT006", "--dataset", "doctor_targets:broken_dataset")
    run = doctor(*args, cwd=PROBES)
    assert run.status == 2
    assert "RT006: could not run: RuntimeError: the data directory /data/train does not exist" in run.stderr
    assert "Traceback" not in run.stderr
    assert "Traceback" in doctor(*args, "--debug", cwd=PROBES).stderr


def test_import_failure_shows_the_traceback_with_debug(tmp_path: Path) -> None:
    (tmp_path / "bad_module.py").write_text("import not_installed_anywhere\n")
    run = doctor("--nproc-per-node", "1", "--dataset", "bad_module:build", "--debug", cwd=tmp_path)
    assert run.status == 2
    assert "cannot import 'bad_module'" in run.stderr and "Traceback" in run.stderr


def test_without_torch_doctor_exits_2_with_the_install_hint(tmp_path: Path) -> None:
    code = "import sys; sys.modules['torch'] = None; from ddplint.cli import main; sys.exit(main(['doctor']))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "ddplint: error: ddplint doctor needs torch: pip install 'ddplint[runtime]'"


def test_check_still_works_without_torch(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "import torch.distributed as dist\nif dist.get_rank() == 0:\n    dist.barrier()\n"
    )
    code = "import sys; sys.modules['torch'] = None; from ddplint.cli import main; sys.exit(main(['check', '.']))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 1 and "DDP001" in proc.stdout, proc.stderr

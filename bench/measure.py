"""Timing helpers: medians of repeats, and a child process's wall time and peak memory."""

import compileall
import functools
import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def median_of(repeats: int, fn: Callable[[], float]) -> tuple[float, list[float]]:
    samples = [fn() for _ in range(repeats)]
    return statistics.median(samples), samples


def _high_water_kb(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM). Unlike getrusage's ru_maxrss, it starts afresh
    at exec, so it does not count the benchmark process that forked the child."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_process(args: list[str], env: dict | None = None) -> tuple[float, float]:
    """Wall seconds from process start to exit, and its peak resident memory in MB (sampled every 10 ms)."""
    elapsed, peak_mb, _ = run_process_cpu(args, env)
    return elapsed, peak_mb


@functools.cache
def _compiled() -> None:
    """specdash's modules compiled to bytecode once, where imports look for it."""
    packages = (
        p
        for p in REPO.iterdir()
        if (p / "__init__.py").is_file() and not p.is_symlink() and p.name != "tests"
    )
    for package in packages:
        compileall.compile_dir(package, quiet=1)


def user_env(env: dict | None = None) -> dict:
    """The environment a user's `specdash` runs in: its bytecode compiled and read from the cache, as an
    installed package has it. A machine that sets PYTHONDONTWRITEBYTECODE (this one does) would otherwise
    make every timed process compile each of specdash's modules again: 0.1 s of CPU a process, a sixth of
    a small ingest's."""
    _compiled()
    return {k: v for k, v in (os.environ if env is None else env).items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_process_cpu(args: list[str], env: dict | None = None) -> tuple[float, float, float]:
    """run_process's wall seconds and peak MB, and the CPU seconds (user + system) the process used: on a
    shared machine the wall time waits for cores, the CPU time does not. The process runs as a user's
    would (user_env)."""
    out_file, err_file = tempfile.TemporaryFile(), tempfile.TemporaryFile()  # a pipe could fill and block
    start = time.perf_counter()
    proc = subprocess.Popen(args, env=user_env(env), stdout=out_file, stderr=err_file)
    peak_kb = 0
    while True:
        peak_kb = max(peak_kb, _high_water_kb(proc.pid))
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(0.01)
    elapsed = time.perf_counter() - start
    out_file.seek(0)
    err_file.seek(0)
    out, err = out_file.read().decode(), err_file.read().decode()
    out_file.close()
    err_file.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}):\n{out}\n{err}")
    return elapsed, peak_kb / 1024, usage.ru_utime + usage.ru_stime

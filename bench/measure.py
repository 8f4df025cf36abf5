"""Timing helpers: medians of repeats, and a child process's wall time and peak memory."""

import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable


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


def run_process(args: list[str], env: dict | None = None) -> tuple[float, float]:
    """Wall seconds from process start to exit, and its peak resident memory in MB."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
    proc.stdout.close()
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}):\n{out}\n{err}")
    return elapsed, usage.ru_maxrss / 1024

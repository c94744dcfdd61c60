"""Shared by the peer runners: the timing protocol and the result record.

A runner process is started fresh per (peer, model): it imports only what its runtime needs,
records its RSS after the imports, loads the artifact and produces the first output (timed:
"file to first output"), warms up, times `runs` calls, and prints one JSON line (run_peer.py).
"""
import resource
import statistics
import time


def rss_mib():
    """Peak resident set size of this process so far, in MiB: VmHWM from /proc/self/status
    (this program's own high-water mark; ru_maxrss on Linux also carries the parent's peak
    across fork + exec), else ru_maxrss."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def current_rss_mib():
    """Current resident set size in MiB (from /proc), or the peak where /proc is absent."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * resource.getpagesize() / (1024.0 * 1024.0)
    except OSError:
        return rss_mib()


def measure(load_and_first, call, runs, warmup):
    """Times `load_and_first()` once, then `call()` warmup + runs times. Returns a result dict."""
    base_rss = current_rss_mib()
    t0 = time.perf_counter()
    load_and_first()
    load_ms = (time.perf_counter() - t0) * 1e3
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        call()
        samples.append((time.perf_counter() - t) * 1e3)
    return summarize(samples, load_ms=load_ms, base_rss_mib=base_rss, peak_rss_mib=rss_mib())


def summarize(samples, **extra):
    s = sorted(samples)
    n = len(s)
    out = {
        "median_ms": statistics.median(s),
        "min_ms": s[0],
        "p90_ms": s[max(0, -(-9 * n // 10) - 1)],
        "max_ms": s[-1],
        "runs": n,
        "samples_ms": samples,
    }
    out.update(extra)
    return out

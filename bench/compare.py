"""Drives the side-by-side comparison (bench/compare.sh calls it): for every model, prepares
each peer's artifact and times it in a fresh process at the same thread count on the same
input, then writes the tables to docs/BENCHMARKS.md and the raw figures to bench/out/results.json.

A peer that fails to prepare or run is a table cell saying so; it never stops the run.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

# (key, title): the table columns, tern first.
PEERS = [
    ("tern-portable", "tern portable"),
    ("tern-cpu", "tern cpu"),
    ("executorch", "ExecuTorch XNNPACK"),
    ("ort", "ONNX Runtime"),
    ("torch", "PyTorch eager"),
]


def log(msg):
    print("[compare %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def call_step(python, args, timeout):
    """Runs run_peer.py with `args` under `python`; returns its result dict (or {"error": ...})."""
    cmd = [python, os.path.join(HERE, "run_peer.py")] + [str(a) for a in args]
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                           timeout=timeout, cwd=HERE)
    except subprocess.TimeoutExpired:
        return {"error": "timed out after %d s" % timeout}
    except OSError as e:
        return {"error": "cannot start %s: %s" % (python, e)}
    for line in reversed(r.stdout.splitlines()):
        if line.startswith("@@RESULT "):
            return json.loads(line[len("@@RESULT "):])
    tail = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {"error": "exit %d: %s" % (r.returncode, tail[:300])}


def machine():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        flags = " ".join(x for x in ("avx2", "avx512f", "fma") if (" " + x + " ") in text)
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "flags": flags, "kernel": platform.release(),
            "loadavg": os.getloadavg()}


def fmt_ms(r):
    if r is None:
        return "—"
    if "error" in r:
        return "n/a" if r.get("skipped") else "failed"
    return "%.2f" % r["median_ms"]


def ratio(a, b):
    if not a or not b or "error" in a or "error" in b:
        return "—"
    return "%.2f×" % (a["median_ms"] / b["median_ms"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=int(os.environ.get("BENCH_THREADS", 2)))
    ap.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_RUNS", 30)))
    ap.add_argument("--warmup", type=int, default=int(os.environ.get("BENCH_WARMUP", 5)))
    ap.add_argument("--models", default=os.environ.get("BENCH_MODELS", ""))
    ap.add_argument("--peers", default=os.environ.get("BENCH_PEERS", ""))
    ap.add_argument("--et-python", default=sys.executable)
    ap.add_argument("--xnnpack-fc", default="", help="the raw XNNPACK fully-connected bench binary")
    ap.add_argument("--workdir", default=os.path.join(HERE, "out"))
    ap.add_argument("--report", default=os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    ap.add_argument("--command", default="bench/compare.sh")
    ap.add_argument("--note", default=os.environ.get("BENCH_NOTE", ""))
    args = ap.parse_args()
    args.et_python = os.path.abspath(args.et_python)

    import numpy as np
    import torch
    import models

    if args.runs < 20:
        log("warning: %d runs (< 20): figures are indicative only" % args.runs)
    names = [m for m in (args.models.split(",") if args.models else models.MODELS) if m]
    peers = [p for p, _ in PEERS if not args.peers or p in args.peers.split(",")]
    art_dir = os.path.join(args.workdir, "artifacts")
    os.makedirs(art_dir, exist_ok=True)
    info = machine()
    started = datetime.datetime.now().astimezone()
    results = {}
    python = sys.executable
    prepare_timeout = int(os.environ.get("BENCH_PREPARE_TIMEOUT", 1800))
    run_timeout = int(os.environ.get("BENCH_RUN_TIMEOUT", 900))

    def run_peer(peer, name, input_npy):
        step_python = args.et_python if peer == "executorch" else python
        module = "tern" if peer.startswith("tern") else peer
        prep = ["prepare", module, name, art_dir]
        if peer.startswith("tern"):
            prep.append(peer.split("-", 1)[1])
        t = time.time()
        p = call_step(step_python, prep, prepare_timeout)
        if "error" in p:
            log("%s %s: prepare failed: %s" % (name, peer, p["error"]))
            return {"error": "prepare: " + p["error"]}
        art = p["artifact"]
        if peer == "tern-cpu" and not art.get("delegates"):
            log("%s %s: no cpu delegate (%s)" % (name, peer, art.get("note", "nothing delegated")))
            return {"error": "no cpu delegate", "skipped": True, "note": art.get("note", "")}
        log("%s %s: prepared in %.0f s; timing" % (name, peer, time.time() - t))
        out_json = os.path.join(args.workdir, "%s.%s.bench.json" % (name, peer))
        r = call_step(step_python, ["run", module, json.dumps(art), input_npy, args.threads, args.runs,
                                    args.warmup, out_json], run_timeout)
        if "error" in r:
            log("%s %s: run failed: %s" % (name, peer, r["error"]))
            return {"error": "run: " + r["error"]}
        res = r["result"]
        log("%s %s: median %.3f ms, load %.1f ms, peak RSS %.0f MiB" %
            (name, peer, res["median_ms"], res["load_ms"], res["peak_rss_mib"]))
        return res

    for name in names:
        shutil.rmtree(os.path.join(art_dir, name + ".graph"), ignore_errors=True)
        model, x = models.build(name)
        input_npy = os.path.join(args.workdir, name + ".input.npy")
        np.save(input_npy, x.numpy().astype(np.float32))
        results[name] = {"weights_bytes": models.weight_bytes(model)}
        del model
        for peer in peers:
            try:
                results[name][peer] = run_peer(peer, name, input_npy)
            except Exception as e:  # noqa: BLE001 - one peer never stops the run
                log("%s %s: %s" % (name, peer, e))
                results[name][peer] = {"error": "%s: %s" % (type(e).__name__, e)}

    # Raw XNNPACK against tern's cpu delegate on one fully-connected layer.
    fc = None
    cpu_present = any(isinstance(results[n].get("tern-cpu"), dict) and "median_ms" in results[n]["tern-cpu"]
                      for n in names)
    if args.xnnpack_fc and os.path.exists(args.xnnpack_fc) and (cpu_present or "tern-cpu" in peers):
        fc = {"shape": models.FC_SHAPE}
        torch.manual_seed(1)
        x = torch.randn(models.FC_SHAPE["batch"], models.FC_SHAPE["in"])
        fc_npy = os.path.join(args.workdir, "fc.input.npy")
        shutil.rmtree(os.path.join(art_dir, "fc.graph"), ignore_errors=True)
        np.save(fc_npy, x.numpy())
        fc["tern-cpu"] = run_peer("tern-cpu", "fc", fc_npy)
        if "median_ms" in fc["tern-cpu"]:
            cmd = [args.xnnpack_fc, str(models.FC_SHAPE["batch"]), str(models.FC_SHAPE["in"]),
                   str(models.FC_SHAPE["out"]), str(args.threads), str(args.runs), str(args.warmup)]
            try:
                r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   universal_newlines=True, timeout=run_timeout)
                fc["xnnpack"] = json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr.strip()[-300:]}
            except (subprocess.TimeoutExpired, ValueError) as e:
                fc["xnnpack"] = {"error": str(e)[:300]}
            log("fc raw XNNPACK: %s" % fc["xnnpack"].get("median_ms", fc["xnnpack"].get("error")))

    info["loadavg_end"] = os.getloadavg()
    record = {"machine": info, "started": started.isoformat(timespec="seconds"), "threads": args.threads,
              "runs": args.runs, "warmup": args.warmup, "command": args.command, "results": results,
              "fc": fc}
    with open(os.path.join(args.workdir, "results.json"), "w") as f:
        json.dump(record, f, indent=1)
    write_report(args, record, names, peers, models)
    log("wrote %s" % args.report)


def write_report(args, rec, names, peers, models):
    info = rec["machine"]
    titles = dict(PEERS)
    res = rec["results"]
    cpu_ok = any("median_ms" in res[n].get("tern-cpu", {}) for n in names)
    tern_key = "tern-cpu" if cpu_ok else "tern-portable"
    lines = []
    w = lines.append
    w("# Benchmarks: tern against its peers")
    w("")
    w("Produced by `%s` (bench/compare.py; peers in bench/peer_*.py). Re-run it to refresh this "
      "page; docs/BENCH.md says what counts." % rec["command"])
    w("")
    w("| | |")
    w("|---|---|")
    w("| date | %s |" % rec["started"])
    w("| machine | %s, %d cores (%s), Linux %s, no GPU used |" % (info["cpu"], info["cores"], info["flags"], info["kernel"]))
    w("| load average | %.2f / %.2f / %.2f at start, %.2f / %.2f / %.2f at end |" %
      (tuple(info["loadavg"]) + tuple(info["loadavg_end"])))
    w("| threads | %d for every runtime (tern `--threads`, ORT `intra_op_num_threads`, ExecuTorch threadpool, "
      "`torch.set_num_threads`); tern's portable kernels always run on one thread |" % rec["threads"])
    w("| protocol | same input (seeded), one fresh process per runtime and model; load + first output, %d warm-up, "
      "median of %d timed runs |" % (rec["warmup"], rec["runs"]))
    versions = {}
    for n in names:
        for p in peers:
            v = res[n].get(p, {}).get("version")
            if v:
                versions[titles[p]] = v
    if versions:
        w("| peer versions | %s |" % ", ".join("%s %s" % kv for kv in sorted(versions.items())))
    w("")
    if args.note:
        w("> **Note.** " + args.note)
        w("")
    w("## Latency (median ms, batch 1, f32)")
    w("")
    w("Ratio = tern (%s) median ÷ peer median: below 1× tern is faster." % titles[tern_key])
    w("")
    shown = [p for p in peers if p != "tern-cpu" or cpu_ok]
    peer_cols = [p for p in shown if not p.startswith("tern")]
    header = ["model"] + [titles[p] for p in shown] + ["tern ÷ %s" % titles[p] for p in peer_cols]
    w("| " + " | ".join(header) + " |")
    w("|" + "---|" * len(header))
    for n in names:
        row = ["%s" % n] + [fmt_ms(res[n].get(p)) for p in shown]
        row += [ratio(res[n].get(tern_key), res[n].get(p)) for p in peer_cols]
        w("| " + " | ".join(row) + " |")
    w("")
    w("Models: " + "; ".join("`%s`: %s" % (n, models.MODELS[n][2]) for n in names if n in models.MODELS) + ".")
    w("")
    if not cpu_ok and "tern-cpu" in peers:
        w("tern's cpu backend did not delegate anything in this build, so only the portable "
          "kernels were timed.")
        w("")
    failures = [(n, p, res[n][p]["error"]) for n in names for p in shown
                if isinstance(res[n].get(p), dict) and "error" in res[n][p] and not res[n][p].get("skipped")]
    if failures:
        w("Failures (the cell says `failed`):")
        w("")
        for n, p, e in failures:
            w("- %s / %s: `%s`" % (n, titles[p], e.replace("`", "'").replace("|", "/")))
        w("")
    if "linear_stack" in names:
        ws = res["linear_stack"]["weights_bytes"]
        w("### Weight bandwidth (linear_stack, %.0f MiB of f32 weights read per run)" % (ws / 2**20))
        w("")
        w("| runtime | median ms | weight read GB/s |")
        w("|---|---|---|")
        for p in shown:
            r = res["linear_stack"].get(p)
            if r and "median_ms" in r:
                w("| %s | %.2f | %.1f |" % (titles[p], r["median_ms"], ws / (r["median_ms"] * 1e-3) / 1e9))
        w("")
        w("For scale: docs/BENCH.md measured ≈ 41 GB/s read bandwidth on one thread and ≈ 78 GB/s on two "
          "on this class of machine.")
        w("")
    w("## Load (file to first output) and peak RSS")
    w("")
    w("Load = opening the file through the first output, in a fresh process. Peak RSS is the process's "
      "high-water mark (`VmHWM`, mapped weight pages included); the Python peers include their interpreter and imports (in parentheses: RSS "
      "right after the imports), tern is the `tern bench` C++ process.")
    w("")
    header = ["model"] + ["%s load ms / peak MiB" % titles[p] for p in shown]
    w("| " + " | ".join(header) + " |")
    w("|" + "---|" * len(header))
    for n in names:
        row = [n]
        for p in shown:
            r = res[n].get(p)
            if not r or "error" in r:
                row.append("—")
                continue
            cell = "%.1f / %.0f" % (r["load_ms"], r["peak_rss_mib"])
            if r.get("base_rss_mib"):
                cell += " (%.0f)" % r["base_rss_mib"]
            row.append(cell)
        w("| " + " | ".join(row) + " |")
    w("")
    fc = rec.get("fc")
    w("## Raw XNNPACK against tern's cpu delegate on one layer")
    w("")
    if fc and "median_ms" in fc.get("tern-cpu", {}) and "median_ms" in fc.get("xnnpack", {}):
        s = fc["shape"]
        wb = s["in"] * s["out"] * 4
        t, x = fc["tern-cpu"], fc["xnnpack"]
        w("One fully-connected layer, batch %d, %d → %d (f32, %.0f MiB of weights), %d threads; "
          "bench/xnnpack_fc.cpp calls XNNPACK's operator API directly (Debian's libxnnpack); "
          "tern's delegate runs the layer on its own packed GEMM (backends/cpu/kernels) through "
          "the whole runtime (Method, delegate call, edge copies)." %
          (s["batch"], s["in"], s["out"], wb / 2**20, rec["threads"]))
        w("")
        w("| | median ms | weight read GB/s |")
        w("|---|---|---|")
        w("| raw XNNPACK | %.3f | %.1f |" % (x["median_ms"], wb / (x["median_ms"] * 1e-3) / 1e9))
        w("| tern cpu delegate | %.3f | %.1f |" % (t["median_ms"], wb / (t["median_ms"] * 1e-3) / 1e9))
        w("| tern ÷ raw XNNPACK | %.2f× | |" % (t["median_ms"] / x["median_ms"]))
    elif fc:
        w("Not measured: tern cpu: `%s`; raw XNNPACK: `%s`." %
          (fc.get("tern-cpu", {}).get("error", "ok"), fc.get("xnnpack", {}).get("error", "not run")))
    else:
        w("Not measured in this run (needs tern's cpu backend and bench/xnnpack_fc, built by compare.sh "
          "when libxnnpack-dev is installed).")
    w("")
    with open(args.report, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()

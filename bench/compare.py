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


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def aggregate(rounds):
    """One peer's rounds -> one result: the median of the round medians (min and p90 likewise),
    the median load time, the highest peak RSS, and every round's median in `rounds_ms` (None
    for a failed round). All rounds failed: the first error."""
    ok = [r for r in rounds if "median_ms" in r]
    if not ok:
        return rounds[0] if rounds else {"error": "not run"}
    out = dict(ok[0])
    for key in ("median_ms", "min_ms", "p90_ms", "load_ms", "mean_ms"):
        vals = [r[key] for r in ok if key in r]
        if vals:
            out[key] = median(vals)
    rss = [r["peak_rss_mib"] for r in ok if "peak_rss_mib" in r]
    if rss:
        out["peak_rss_mib"] = max(rss)
    out["rounds_ms"] = [r.get("median_ms") for r in rounds]
    return out


def round_ratios(a, b):
    """tern ÷ peer in each round where both ran."""
    ra, rb = a.get("rounds_ms"), b.get("rounds_ms")
    if not ra or not rb or len(ra) != len(rb):
        return []
    return [x / y for x, y in zip(ra, rb) if x and y]


def ratio(a, b, spread=False):
    """The median over rounds of tern ÷ peer (both timed in the same round), with the range of
    the per-round ratios when `spread`."""
    if not a or not b or "error" in a or "error" in b:
        return "—"
    rs = round_ratios(a, b)
    if not rs:
        return "%.2f×" % (a["median_ms"] / b["median_ms"])
    text = "%.2f×" % median(rs)
    if spread and len(rs) > 1:
        text += " (%.2f–%.2f)" % (min(rs), max(rs))
    return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=int(os.environ.get("BENCH_THREADS", 2)))
    ap.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_RUNS", 30)))
    ap.add_argument("--warmup", type=int, default=int(os.environ.get("BENCH_WARMUP", 5)))
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("BENCH_ROUNDS", 5)),
                    help="timing rounds: each round times every peer once, in alternating order")
    ap.add_argument("--models", default=os.environ.get("BENCH_MODELS", ""))
    ap.add_argument("--peers", default=os.environ.get("BENCH_PEERS", ""))
    ap.add_argument("--et-python", default=sys.executable)
    ap.add_argument("--xnnpack-fc", default="", help="the raw XNNPACK fully-connected bench binary")
    ap.add_argument("--workdir", default=os.path.join(HERE, "out"))
    ap.add_argument("--report", default=os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    ap.add_argument("--command", default="bench/compare.sh")
    ap.add_argument("--note", default=os.environ.get("BENCH_NOTE", ""))
    ap.add_argument("--phase", choices=("all", "prepare"), default=os.environ.get("BENCH_PHASE", "all"),
                    help="prepare: only prepare every model's artifacts (exports, compiles) and "
                         "record them in WORKDIR/prepared.json, timing nothing; a later run "
                         "reuses them for the peers named by --reuse")
    ap.add_argument("--reuse", default=os.environ.get("BENCH_REUSE", ""),
                    help="peers (comma-separated) whose artifacts from an earlier --phase "
                         "prepare run are reused when their files still exist")
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

    manifest_path = os.path.join(args.workdir, "prepared.json")
    try:
        with open(manifest_path) as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        manifest = {}
    reuse = set(p for p in args.reuse.split(",") if p)

    def artifact_files_exist(art):
        paths = [v for v in art.values() if isinstance(v, str) and v.startswith(args.workdir)]
        return all(os.path.exists(p) for p in paths)

    def prepare_peer(peer, name):
        """The peer's artifact for `name` (a dict), or {"error": ...}."""
        key = "%s/%s" % (name, peer)
        if peer in reuse and key in manifest and artifact_files_exist(manifest[key]):
            log("%s %s: reusing the prepared artifact" % (name, peer))
            art = manifest[key]
            if peer == "tern-cpu" and not art.get("delegates"):
                return {"error": "no cpu delegate", "skipped": True, "note": art.get("note", "")}
            return {"artifact": art}
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
        manifest[key] = art
        with open(manifest_path, "w") as f:
            json.dump(manifest, f, indent=1)
        if peer == "tern-cpu" and not art.get("delegates"):
            log("%s %s: no cpu delegate (%s)" % (name, peer, art.get("note", "nothing delegated")))
            return {"error": "no cpu delegate", "skipped": True, "note": art.get("note", "")}
        log("%s %s: prepared in %.0f s" % (name, peer, time.time() - t))
        return {"artifact": art}

    def time_peer(peer, name, art, input_npy, rnd):
        """One timing run of a prepared peer in a fresh process: its result dict or {"error": ...}."""
        step_python = args.et_python if peer == "executorch" else python
        module = "tern" if peer.startswith("tern") else peer
        out_json = os.path.join(args.workdir, "%s.%s.bench.json" % (name, peer))
        r = call_step(step_python, ["run", module, json.dumps(art), input_npy, args.threads, args.runs,
                                    args.warmup, out_json], run_timeout)
        if "error" in r:
            log("%s %s round %d: run failed: %s" % (name, peer, rnd + 1, r["error"]))
            return {"error": "run: " + r["error"]}
        res = r["result"]
        log("%s %s round %d: median %.3f ms, load %.1f ms, peak RSS %.0f MiB" %
            (name, peer, rnd + 1, res["median_ms"], res["load_ms"], res["peak_rss_mib"]))
        return res

    def measure(name, input_npy, which):
        """Prepares each peer of `which`, then times them in args.rounds rounds (every peer once
        per round; the order reverses every other round), so that the peers are compared at the
        same moments of a machine whose speed drifts. Returns {peer: aggregated result}."""
        arts = {p: prepare_peer(p, name) for p in which}
        if args.phase == "prepare":
            return arts
        per_round = {p: [] for p in which}
        for rnd in range(max(1, args.rounds)):
            order = which if rnd % 2 == 0 else list(reversed(which))
            for p in order:
                if "artifact" in arts[p]:
                    per_round[p].append(time_peer(p, name, arts[p]["artifact"], input_npy, rnd))
        return {p: (aggregate(per_round[p]) if "artifact" in arts[p] else arts[p]) for p in which}

    for name in names:
        if not reuse & {"tern-portable", "tern-cpu"}:  # tern's graph is exported afresh
            shutil.rmtree(os.path.join(art_dir, name + ".graph"), ignore_errors=True)
        model, xs = models.build(name)
        # One .npy per model input (dtypes kept: BERT's ids are int64); the peers get the paths
        # comma-separated.
        npys = []
        for i, x in enumerate(xs):
            npys.append(os.path.join(args.workdir, "%s.input%d.npy" % (name, i)))
            np.save(npys[-1], x.numpy())
        input_npy = ",".join(npys)
        results[name] = {"weights_bytes": models.weight_bytes(model)}
        del model
        try:
            results[name].update(measure(name, input_npy, peers))
        except Exception as e:  # noqa: BLE001 - one model never stops the run
            log("%s: %s" % (name, e))
            for peer in peers:
                results[name].setdefault(peer, {"error": "%s: %s" % (type(e).__name__, e)})

    if args.phase == "prepare":
        log("prepared %d models; artifacts recorded in %s" % (len(names), manifest_path))
        return
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
        prep = prepare_peer("tern-cpu", "fc")
        if "artifact" in prep:
            cmd = [args.xnnpack_fc, str(models.FC_SHAPE["batch"]), str(models.FC_SHAPE["in"]),
                   str(models.FC_SHAPE["out"]), str(args.threads), str(args.runs), str(args.warmup)]
            ours, raw = [], []
            for rnd in range(max(1, args.rounds)):  # alternating, like the models
                ours.append(time_peer("tern-cpu", "fc", prep["artifact"], fc_npy, rnd))
                try:
                    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       universal_newlines=True, timeout=run_timeout)
                    raw.append(json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr.strip()[-300:]})
                except (subprocess.TimeoutExpired, ValueError) as e:
                    raw.append({"error": str(e)[:300]})
                log("fc raw XNNPACK round %d: %s" % (rnd + 1, raw[-1].get("median_ms", raw[-1].get("error"))))
            fc["tern-cpu"], fc["xnnpack"] = aggregate(ours), aggregate(raw)
        else:
            fc["tern-cpu"] = prep

    info["loadavg_end"] = os.getloadavg()
    record = {"machine": info, "started": started.isoformat(timespec="seconds"), "threads": args.threads,
              "runs": args.runs, "warmup": args.warmup, "rounds": max(1, args.rounds), "command": args.command, "results": results,
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
    w("| protocol | same input (seeded); %d rounds, each timing every runtime once in a fresh process (the order "
      "reverses every other round); a timing = load + first output, %d warm-up, median of %d timed runs; a "
      "cell is the median over the rounds, a ratio the median of the per-round ratios (range in brackets) |"
      % (rec.get("rounds", 1), rec["warmup"], rec["runs"]))
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
    w("Ratio = tern (%s) ÷ peer, the median over the rounds of the two medians timed in the same round "
      "(in brackets: the lowest and highest round): below 1× tern is faster." % titles[tern_key])
    w("")
    shown = [p for p in peers if p != "tern-cpu" or cpu_ok]
    peer_cols = [p for p in shown if not p.startswith("tern")]
    header = ["model"] + [titles[p] for p in shown] + ["tern ÷ %s" % titles[p] for p in peer_cols]
    w("| " + " | ".join(header) + " |")
    w("|" + "---|" * len(header))
    for n in names:
        row = ["%s" % n] + [fmt_ms(res[n].get(p)) for p in shown]
        row += [ratio(res[n].get(tern_key), res[n].get(p), spread=True) for p in peer_cols]
        w("| " + " | ".join(row) + " |")
    w("")
    w("Models: " + "; ".join("`%s`: %s" % (n, models.MODELS[n][2]) for n in names if n in models.MODELS) + ".")
    w("")
    if rec.get("rounds", 1) > 1:
        w("### Every round (median ms)")
        w("")
        w("This VM's speed drifts (its two vCPUs sometimes run at about half the two-thread throughput "
          "for seconds to minutes), so one runtime's median can move 1.5x between rounds; the rounds let "
          "each ratio compare runtimes timed at the same moment.")
        w("")
        header = ["model"] + [titles[p] for p in shown]
        w("| " + " | ".join(header) + " |")
        w("|" + "---|" * len(header))
        for n in names:
            row = [n]
            for p in shown:
                r = res[n].get(p) or {}
                rs = r.get("rounds_ms")
                row.append(" / ".join("%.2f" % x if x else "failed" for x in rs) if rs else fmt_ms(r))
            w("| " + " | ".join(row) + " |")
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
        w("| tern ÷ raw XNNPACK | %s | |" % ratio(t, x, spread=True))
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

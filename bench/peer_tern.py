"""tern: capture with tern_export.export_graph, compile with `tern compile` (portable, and
`--backend cpu` when this build delegates to the cpu backend), time with `tern bench --json`.

The timing, load time and peak RSS all come from the `tern bench` process itself.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "export"))


def _tern():
    return os.environ["TERN"]


def _compile(graph_json, out, backend):
    cmd = [_tern(), "compile", graph_json, "-o", out]
    if backend != "portable":
        cmd += ["--backend", backend]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0 and not os.path.exists(out):
        raise RuntimeError("tern compile (%s) failed: %s" % (backend, r.stderr.strip()[-400:]))
    return out


def delegates(pte, backend):
    """How many delegate calls for `backend` the program has (from `tern inspect`)."""
    r = subprocess.run([_tern(), "inspect", pte], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    count = 0
    for line in r.stdout.splitlines():
        if "delegate:" + backend in line:
            digits = [w for w in line.replace(":", " ").split() if w.isdigit()]
            count += int(digits[-1]) if digits else 1
    return count


def prepare(name, model, examples, outdir, backend="portable"):
    import tern_export
    # compare.py clears the graph folder before each model, so the second backend reuses it.
    graph_dir = os.path.join(outdir, name + ".graph")
    graph_json = os.path.join(graph_dir, "graph.json")
    if not os.path.exists(graph_json):
        graph_json, _ = tern_export.export_graph(model, tuple(examples), graph_dir)
    path = os.path.join(outdir, "%s.tern-%s.pte" % (name, backend))
    if os.path.exists(path):
        os.remove(path)
    try:
        _compile(graph_json, path, backend)
    except RuntimeError as e:
        # A build without that backend (or a compiler without --backend) is "not available".
        if backend != "portable" and "backend" in str(e):
            return {"path": None, "delegates": 0, "note": str(e)[-300:]}
        raise
    art = {"path": path}
    if backend != "portable":
        art["delegates"] = delegates(path, backend)
    return art


def run(artifact, input_npys, threads, runs, warmup, out_json):
    cmd = [_tern(), "bench", artifact["path"], "--threads", str(threads), "--iterations", str(runs),
           "--warmup", str(warmup), "--json", out_json]
    for npy in input_npys.split(","):
        cmd += ["--input", npy]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0:
        raise RuntimeError("tern bench failed: " + r.stderr.strip()[-400:])
    with open(out_json) as f:
        s = json.load(f)
    from peer_common import summarize
    return summarize(s["samples_ms"], load_ms=s["load_ms"] + s["first_execute_ms"], base_rss_mib=None,
                     peak_rss_mib=s["peak_rss_mib"], delegate_lines=[l for l in r.stdout.splitlines()
                                                                     if l.startswith("delegate call")])

#!/usr/bin/env python3
"""Language-model decode speed (issue 15 item 5): a Llama with TinyLlama-1.1B's widths (hidden
2048, 32 heads / 4 KV heads, MLP 5632, vocab 32000; random weights, nothing downloaded) and
--layers decoder layers, exported by tern_export.export_llm (prefill + decode sharing
transformers' own StaticCache, docs/llm-decoding.md), decoded greedily by `tern generate` and by
PyTorch eager (the same wrapper: the prompt in one forward pass, then token by token) in
alternating rounds, same thread count; plus the
bandwidth bound: weight bytes read per token / a STREAM-style read loop's bandwidth (measured in
the same run, bench/quant_linear_stack.py's loop).

    .venv/bin/python bench/llm_decode.py --tern build-bench/tern --layers 4 --threads 2

The greedy tokens of tern and PyTorch must be equal (else the run stops: a speed figure of a
wrong answer is no figure).

--moe swaps the MLPs for a Mixtral-style mixture of experts (--experts, top-2 by default, each
expert a SwiGLU MLP of --expert-inter), exported with export_llm(static_prefill=True) (prefill in
chunks of exactly --max-prefill tokens); the bound then counts the picked experts' weights only.

--llama-cpp f32,q8_0,q4_0 adds llama.cpp (bench/setup-llama-cpp.sh builds it) in the same rounds:
the same weights written to GGUF and quantized by llama.cpp (bench/llama_cpp_peer.py). Its f32
greedy tokens are compared with PyTorch's and the table says whether they agree.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools", "export"))


def build_model(layers, moe=None):
    """The Llama (moe None) or a Mixtral of the same attention with moe = (experts, top_k,
    expert MLP width, hidden); and the weight bytes one decoded token reads."""
    import torch
    import transformers as tf
    torch.manual_seed(0)
    if moe is None:
        cfg = tf.LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632,
                             num_hidden_layers=layers, num_attention_heads=32,
                             num_key_value_heads=4, max_position_embeddings=2048,
                             attn_implementation="sdpa")
        model = tf.LlamaForCausalLM(cfg).eval()
    else:
        experts, top_k, inter, hidden = moe
        cfg = tf.MixtralConfig(vocab_size=32000, hidden_size=hidden, intermediate_size=inter,
                               num_hidden_layers=layers, num_attention_heads=hidden // 64,
                               num_key_value_heads=max(1, hidden // 512),
                               max_position_embeddings=2048, num_local_experts=experts,
                               num_experts_per_tok=top_k, attn_implementation="sdpa")
        model = tf.MixtralForCausalLM(cfg).eval()
    hidden = model.config.hidden_size
    weight_bytes = hidden * 4  # one embedding row per token
    for n, p in model.named_parameters():
        if "embed_tokens" in n:
            continue
        share = 1.0
        if moe is not None and ".experts." in n:
            share = moe[1] / moe[0]  # the picked experts' weights only
        weight_bytes += int(p.numel() * 4 * share)
    return model, weight_bytes


def tern_generate(tern, pte, prompt, new_tokens):
    r = subprocess.run([tern, "generate", pte, "--prompt", ",".join(map(str, prompt)),
                        "--max-new-tokens", str(new_tokens)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0:
        raise SystemExit("tern generate failed: " + r.stderr)
    out = r.stdout
    tokens = [int(t) for t in out.split("generated:")[1].splitlines()[0].split()]
    decode = float(re.search(r"decode: \d+ tokens in [\d.]+ ms \(([\d.]+) tokens/s\)", out).group(1))
    prefill = float(re.search(r"prompt: \d+ tokens in [\d.]+ ms \(([\d.]+) tokens/s", out).group(1))
    ttft = float(re.search(r"time to first token: ([\d.]+) ms", out).group(1))
    rss = float(re.search(r"peak RSS: ([\d.]+) MiB", out).group(1))
    return tokens, decode, prefill, ttft, rss


def greedy_timed(prefill, step, prompt, new_tokens):
    """Greedy tokens, decode tokens/s and prefill tokens/s of one runtime: prefill(prompt) gives
    the prompt's last logits, step(token, position) the next token's; the first token comes
    from prefill, so decode times new_tokens - 1 steps. Shared by PyTorch and llama.cpp."""
    t0 = time.perf_counter()
    logits = prefill(prompt)
    t1 = time.perf_counter()
    tokens = []
    first = None
    for i in range(new_tokens):
        nxt = int(logits.argmax())
        tokens.append(nxt)
        if first is None:
            first = time.perf_counter()
        if i + 1 == new_tokens:
            break
        logits = step(nxt, len(prompt) + i)
    t2 = time.perf_counter()
    return tokens, (new_tokens - 1) / (t2 - first), len(prompt) / (t1 - t0)


def torch_generate(model, prompt, new_tokens):
    """PyTorch eager through the StaticCache wrapper: the prompt in one forward pass (its last
    position's logits), then token by token."""
    import torch
    with torch.no_grad():
        return greedy_timed(
            lambda ids: model(torch.tensor([ids]), torch.arange(len(ids)))[:, -1],
            lambda tok, pos: model(torch.tensor([[tok]]), torch.tensor([pos])),
            prompt, new_tokens)


def read_bandwidth(work, threads):
    import quant_linear_stack as q
    src = os.path.join(work, "stream.c")
    with open(src, "w") as f:
        f.write(q.STREAM_C)
    exe = os.path.join(work, "stream")
    subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", src, "-o", exe], check=True)
    r = subprocess.run([exe, "5", str(threads)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       universal_newlines=True, check=True)
    return max(float(x) for x in r.stdout.split())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tern", default="build-bench/tern")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=16, help="prompt tokens")
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--max-cache", type=int, default=256)
    ap.add_argument("--max-prefill", type=int, default=64,
                    help="prefill chunk bound (export_llm max_prefill_len)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default=None, help="keep the program here (default: a temp dir)")
    ap.add_argument("--quantize", default=None,
                    help="tern's weights: nf4, fp8_e4m3, ... (tern_export quantize=; PyTorch "
                         "stays f32, so its tokens are not compared)")
    ap.add_argument("--moe", action="store_true",
                    help="a Mixtral-style mixture of experts instead of the Llama MLPs")
    ap.add_argument("--experts", type=int, default=8)
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--expert-inter", type=int, default=3584)
    ap.add_argument("--hidden", type=int, default=1024, help="hidden size of the --moe model")
    ap.add_argument("--llama-cpp", default="",
                    help="llama.cpp weight types to run as peers, e.g. f32,q8_0,q4_0")
    args = ap.parse_args()
    os.environ["TERN"] = os.path.abspath(args.tern)
    import torch
    import tern_export
    torch.set_num_threads(args.threads)
    work = args.work or tempfile.mkdtemp(prefix="tern_llm_bench_")
    os.makedirs(work, exist_ok=True)
    from tern_export.llm import StaticCacheLM
    moe = (args.experts, args.top_k, args.expert_inter, args.hidden) if args.moe else None
    model, weight_bytes = build_model(args.layers, moe)
    suffix = "" if not args.quantize else "_" + args.quantize.replace(":", "_").replace("=", "")
    name = "mixtral_E%dk%d" % (args.experts, args.top_k) if args.moe else "llama"
    pte = os.path.join(work, "%s_L%d%s.pte" % (name, args.layers, suffix))
    bytes_file = pte + ".bytes"
    if not os.path.exists(pte):
        t0 = time.time()
        # No copy of the model (1.1B f32 is 4.4 GB): export_llm wraps it with its own cache.
        result = tern_export.export_llm(model, pte, max_seq_len=args.max_cache,
                                        max_prefill_len=args.max_prefill, verbose=False,
                                        quantize=args.quantize, static_prefill=args.moe)
        print("exported %s in %.0f s" % (pte, time.time() - t0), flush=True)
        if args.quantize:
            # Bytes read per token: each quantized weight's codes and scales (the embedding
            # table's one row aside), the f32 rest.
            q = result.quantization
            quantized = {w["name"]: w for w in q["weights"]}
            total = 0
            for name, p in model.named_parameters():
                # The report names weights by their path in export_llm's wrapper.
                w = quantized.get(name) or quantized.get("w.model." + name)
                size = w["bytes_after"] if w else p.numel() * 4
                if moe is not None and ".experts." in name:
                    size = size * moe[1] // moe[0]  # the picked experts' only
                total += size // 32000 if "embed_tokens" in name else size
            with open(bytes_file, "w") as f:
                f.write(str(total))
    if args.quantize and os.path.exists(bytes_file):
        with open(bytes_file) as f:
            weight_bytes = int(f.read())
    # The last position's logits only, as tern's prefill (export_llm's default) and
    # transformers' generate() (logits_to_keep=1) compute them.
    step = StaticCacheLM(model, args.max_cache, last_logits=True).eval()
    prompt = [int(x) for x in torch.randint(0, 32000, (args.prompt,), generator=torch.Generator().manual_seed(1))]
    bw = read_bandwidth(work, args.threads)
    llama = []  # (kind, runner, weight bytes per token, rows)
    for kind in [k for k in args.llama_cpp.split(",") if k]:
        import llama_cpp_peer
        path = llama_cpp_peer.gguf_for(model, work, kind, args.threads)
        runner = llama_cpp_peer.Runner(path, args.threads, args.max_cache, args.max_prefill,
                                       kv_f32=kind == "f32")
        llama.append((kind, runner, llama_cpp_peer.weight_bytes_per_token(path), []))
    tern_rows, torch_rows = [], []
    for r in range(args.rounds):
        tt, tdec, tpre, ttft, rss = tern_generate(args.tern, pte, prompt, args.new_tokens)
        # The same module every round: the wrapper restarts the cache at position 0 (later
        # entries are masked until written again), as tern's state does.
        pt, pdec, ppre = torch_generate(step, prompt, args.new_tokens)
        if tt != pt and not args.quantize:
            raise SystemExit("round %d: tern's greedy tokens differ from PyTorch's:\n%s\n%s"
                             % (r, tt, pt))
        tern_rows.append((tdec, tpre, ttft, rss))
        torch_rows.append((pdec, ppre))
        print("round %d: tern decode %.2f tok/s (prefill %.2f, TTFT %.1f ms, RSS %.0f MiB); "
              "torch decode %.2f tok/s (prefill %.2f)" % (r, tdec, tpre, ttft, rss, pdec, ppre),
              flush=True)
        for kind, runner, _, rows in llama:
            lt, ldec, lpre = greedy_timed(runner.prefill, runner.step, prompt, args.new_tokens)
            same = next((i for i, (a, b) in enumerate(zip(lt, pt)) if a != b), None)
            rows.append((ldec, lpre, same))
            print("round %d: llama.cpp %s decode %.2f tok/s (prefill %.2f); greedy tokens %s"
                  % (r, kind, ldec, lpre, "equal to PyTorch's" if same is None
                     else "differ from PyTorch's from step %d" % same), flush=True)
    tdec = statistics.median(x[0] for x in tern_rows)
    pdec = statistics.median(x[0] for x in torch_rows)
    bound = bw * 1e9 / weight_bytes
    print("\nlayers %d, %.0f MB of %s weights read per token, read loop %.1f GB/s (best of 5), "
          "bound %.2f tokens/s, %d threads, prompt %d, %d new tokens, cache %d" % (
              args.layers, weight_bytes / 1e6, args.quantize or "f32", bw, bound, args.threads, args.prompt,
              args.new_tokens, args.max_cache))
    print("| runtime | decode tokens/s (median) | of bound | prefill tokens/s (prompt of %d) |"
          % args.prompt)
    print("|---|---:|---:|---:|")
    print("| tern cpu (tern generate) | %.2f | %.0f%% | %.2f |" % (
        tdec, 100 * tdec / bound, statistics.median(x[1] for x in tern_rows)))
    print("| PyTorch %s eager (transformers StaticCache) | %.2f | %.0f%% | %.2f |" % (
        torch.__version__, pdec, 100 * pdec / bound, statistics.median(x[1] for x in torch_rows)))
    for kind, _, wbytes, rows in llama:
        import llama_cpp_peer
        ldec = statistics.median(x[0] for x in rows)
        agree = [x[2] for x in rows]
        print("| llama.cpp %s (llama-cpp-python), %s weights, %.0f MB per token | %.2f | %.0f%% | %.2f |"
              % (llama_cpp_peer.version(), kind, wbytes / 1e6, ldec, 100 * ldec / (bw * 1e9 / wbytes),
                 statistics.median(x[1] for x in rows)))
        print("   llama.cpp %s greedy tokens vs PyTorch f32: %s" % (
            kind, "identical in every round" if all(a is None for a in agree)
            else "first difference at step " + ", ".join("-" if a is None else str(a) for a in agree)))
    print("tern / PyTorch decode: %.2fx; %s" % (
        tdec / pdec, "tern's weights %s, PyTorch's f32 (tokens not compared)" % args.quantize
        if args.quantize else "greedy tokens identical in every round"))


if __name__ == "__main__":
    main()

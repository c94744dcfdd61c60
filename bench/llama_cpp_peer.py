"""llama.cpp as a peer of the language-model benchmarks (bench/llm_decode.py --llama-cpp): the
same random-weight `transformers` Llama that tern runs, written to GGUF with the `gguf` package
(f32), quantized by llama.cpp's own quantizer (q8_0, q4_0, q4_k_m, ...), and decoded greedily
through llama-cpp-python with the same prompt and thread count. Built by
bench/setup-llama-cpp.sh; nothing is downloaded.

The GGUF holds what llama.cpp's converter (convert_hf_to_gguf.py) writes for a Llama: the
hyper-parameters, a SentencePiece-shaped vocabulary (three specials and 256 byte tokens first, as
Llama's; the others placeholders: prompts are token IDs, nothing is tokenized) and the tensors
under llama.cpp's names, Q and K rows permuted from Hugging Face's rotate-half RoPE layout to
llama.cpp's interleaved pairs.
"""
import os

# llama_ftype values of llama.h (stable since 2023).
FTYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 7, "q4_k_m": 15, "q5_k_m": 17, "q6_k": 18}


def _permute(w, n_head):
    """Hugging Face's Q/K rows (per head: the first half of the rotary dims, then the second) to
    llama.cpp's (per head: the dims' pairs interleaved), as convert_hf_to_gguf.py permutes."""
    rows = w.shape[0]
    return (w.reshape(n_head, 2, rows // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def write_f32_gguf(model, path):
    """model: a transformers LlamaForCausalLM (eval, f32). Writes an all-f32 GGUF at path."""
    import gguf
    import numpy as np
    cfg = model.config
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("tern-bench-llama")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_rope_dimension_count(head_dim)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    rope_theta = getattr(cfg, "rope_theta", None)
    if rope_theta is None:
        rope_theta = (getattr(cfg, "rope_parameters", None) or {}).get("rope_theta", 10000.0)
    w.add_rope_freq_base(float(rope_theta))
    w.add_file_type(FTYPES["f32"])
    w.add_vocab_size(cfg.vocab_size)
    tokens, scores, types = [], [], []
    for i in range(cfg.vocab_size):
        if i < 3:
            tokens.append(["<unk>", "<s>", "</s>"][i])
            types.append(gguf.TokenType.UNKNOWN if i == 0 else gguf.TokenType.CONTROL)
        elif i < 3 + 256:
            tokens.append("<0x%02X>" % (i - 3))
            types.append(gguf.TokenType.BYTE)
        else:
            tokens.append("tok%d" % i)
            types.append(gguf.TokenType.NORMAL)
        scores.append(-float(i))
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(False)

    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    names = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
             "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
    w.add_tensor("token_embd.weight", np.ascontiguousarray(sd["model.embed_tokens.weight"]))
    for i in range(cfg.num_hidden_layers):
        for hf, gg in names.items():
            t = sd["model.layers.%d.%s.weight" % (i, hf)]
            if hf == "self_attn.q_proj":
                t = _permute(t, cfg.num_attention_heads)
            elif hf == "self_attn.k_proj":
                t = _permute(t, cfg.num_key_value_heads)
            w.add_tensor("blk.%d.%s.weight" % (i, gg), np.ascontiguousarray(t))
    w.add_tensor("output_norm.weight", sd["model.norm.weight"])
    lm_head = sd.get("lm_head.weight", sd["model.embed_tokens.weight"])
    w.add_tensor("output.weight", np.ascontiguousarray(lm_head))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def quantize(src, dst, kind, threads):
    """llama.cpp's quantizer (llama_model_quantize) from the f32 GGUF src to dst. `pure` keeps
    the embedding and output layers at the chosen type too (llama.cpp otherwise raises some of
    them to a wider type), so every weight is in the scheme the table names."""
    import llama_cpp
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = FTYPES[kind]
    params.nthread = threads
    params.pure = kind in ("q4_0", "q8_0")
    rc = llama_cpp.llama_model_quantize(src.encode(), dst.encode(), params)
    if rc != 0:
        raise SystemExit("llama_model_quantize(%s) failed: %d" % (kind, rc))


def gguf_for(model, work, kind, threads):
    """The GGUF of `kind` in work (written on first use)."""
    f32 = os.path.join(work, "llama_L%d_f32.gguf" % model.config.num_hidden_layers)
    if not os.path.exists(f32):
        write_f32_gguf(model, f32 + ".tmp")
        os.replace(f32 + ".tmp", f32)
    if kind == "f32":
        return f32
    path = os.path.join(work, "llama_L%d_%s.gguf" % (model.config.num_hidden_layers, kind))
    if not os.path.exists(path):
        quantize(f32, path + ".tmp", kind, threads)
        os.replace(path + ".tmp", path)
    return path


def weight_bytes_per_token(path):
    """Bytes of weights one decode step reads: every tensor but the token embedding table, of
    which one row."""
    import gguf
    r = gguf.GGUFReader(path)
    total = 0
    for t in r.tensors:
        n = int(t.n_bytes)
        if t.name == "token_embd.weight":
            n //= int(t.shape[-1]) if len(t.shape) > 1 else 1  # rows: the last GGUF dim
        total += n
    return total


def version():
    import llama_cpp
    return llama_cpp.__version__


class Runner:
    """One loaded llama.cpp model: prefill() and step() for llm_decode.greedy_timed. kv_f32 keeps
    the KV cache in f32 like tern's (llama.cpp's default is f16: the f32 row uses f32, the
    quantized rows llama.cpp's default)."""

    def __init__(self, path, threads, max_cache, max_batch, kv_f32=False):
        import llama_cpp
        kv = {"type_k": 0, "type_v": 0} if kv_f32 else {}  # GGML_TYPE_F32
        self.llm = llama_cpp.Llama(model_path=path, n_ctx=max_cache, n_batch=max_batch,
                                   n_ubatch=max_batch, n_threads=threads,
                                   n_threads_batch=threads, logits_all=False, verbose=False,
                                   use_mmap=True, **kv)

    def _last_logits(self):
        """The last evaluated position's logits (Llama.eval keeps them only with logits_all)."""
        import llama_cpp
        import numpy as np
        ptr = llama_cpp.llama_get_logits_ith(self.llm._ctx.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.llm.n_vocab(),)).copy()

    def prefill(self, prompt):
        """A fresh cache, the prompt (in chunks of max_batch), its last position's logits."""
        self.llm.reset()
        self.llm.eval(prompt)
        return self._last_logits()

    def step(self, token, position):
        """One token at `position` (the cache's next; llama.cpp counts it itself): its logits."""
        del position
        self.llm.eval([token])
        return self._last_logits()

"""export_llm: a Hugging Face `transformers` causal language model as one tern program with two
methods that share the KV cache (docs/llm-decoding.md):

    prefill(tokens int64 [1, seq], positions int64 [seq]) -> logits f32 [1, 1, vocab]
        seq is bounded-dynamic (1..max_prefill_len): a prompt chunk at positions p..p+seq-1;
        the logits are the chunk's last position's ([1, seq, vocab], every position's, with
        prefill_logits="all"). With static_prefill=True seq is exactly max_prefill_len (for
        models whose shapes derive sizes from seq, such as a mixture of experts' seq * top_k
        token-expert pairs, which format 1.1's dims cannot express)
    decode(token int64 [1, 1], position int64 [1]) -> logits f32 [1, 1, vocab]

The cache is transformers' own StaticCache (TorchExportableModuleWithStaticCache, the wrapper
transformers provides for export), max_seq_len positions long; its tensors become shared state
(format 1.2), the weights are stored once. `tern generate` feeds the prompt through prefill in
chunks of at most max_prefill_len tokens (a static prefill: whole chunks, the rest of the prompt
token by token through decode), then decodes token by token.
"""
import torch

from .errors import ExportError


class StaticCacheLM(torch.nn.Module):
    """(tokens [1, seq], positions [seq]) -> logits [1, seq, vocab] of `model` (last_logits:
    [1, 1, vocab], the last position's only) with a static KV cache of max_seq_len positions
    held as buffers (updated in place at `positions`)."""

    def __init__(self, model, max_seq_len, last_logits=False):
        super().__init__()
        self.last_logits = last_logits
        try:
            from transformers.integrations.executorch import TorchExportableModuleWithStaticCache
        except ImportError as e:
            raise ExportError("export_llm needs transformers' TorchExportableModuleWithStaticCache "
                              "(transformers.integrations.executorch): %s" % e) from e
        config = getattr(model, "generation_config", None)
        if config is not None:
            config.use_cache = True
            config.cache_implementation = "static"
        try:
            self.w = TorchExportableModuleWithStaticCache(model, batch_size=1,
                                                          max_cache_len=max_seq_len)
        except (TypeError, AttributeError, ValueError) as e:
            raise ExportError("transformers could not wrap %s with a static cache of %d "
                              "positions: %s: %s" % (type(model).__name__, max_seq_len,
                                                     type(e).__name__, e)) from e

    def _cache_tensors_from_buffers(self):
        """Points the cache's layers at the wrapper's registered buffers (key_cache_i,
        value_cache_i, cumulative_length_i); returns what they held before.

        transformers registers each cache tensor as a buffer of the wrapper but the model reaches
        it through the StaticCache's layer objects, plain Python attributes. Non-strict
        torch.export replaces a module's buffers by traced stand-ins and leaves other objects
        alone: the layers would keep the real tensors, which export then lifts as constants
        aliasing the buffers (run_decompositions fails on the alias, and the cache updates are
        not buffer mutations). Reading them through the buffers here makes the updates buffer
        mutations, so non-strict tracing works and strict tracing (TorchDynamo, which clones
        every parameter: ~3x the weights in memory) is not needed."""
        saved = []
        for i, layer in enumerate(getattr(self.w.static_cache, "layers", ())):
            names = {"keys": "key_cache_%d" % i, "values": "value_cache_%d" % i,
                     "cumulative_length": "cumulative_length_%d" % i}
            for attr, buffer in names.items():
                if self.w._buffers.get(buffer) is not None and hasattr(layer, attr):
                    saved.append((layer, attr, getattr(layer, attr)))
                    setattr(layer, attr, getattr(self.w, buffer))
        return saved

    def forward(self, tokens, positions):
        saved = self._cache_tensors_from_buffers()
        try:
            return self._forward(tokens, positions)
        finally:
            for layer, attr, tensor in saved:
                setattr(layer, attr, tensor)

    def _forward(self, tokens, positions):
        if not self.last_logits:
            return self.w(input_ids=tokens, cache_position=positions)
        # transformers' wrapper forward (reset the cache's fill level to the chunk's first
        # position, run the model on the cache), asking the model for the last position's
        # logits only (`logits_to_keep`): the LM head then runs on one row, not on every row.
        for layer in self.w.static_cache.layers:
            layer.cumulative_length.copy_(positions[0])
        out = self.w.model(input_ids=tokens, attention_mask=None, cache=self.w.static_cache,
                           use_cache=True, logits_to_keep=1)
        return out.logits


def llm_methods(model, max_seq_len, max_prefill_len=None, prefill_logits="last",
                static_prefill=False):
    """{"prefill": Method, "decode": Method} over one StaticCacheLM of `model` (export_llm)."""
    from . import Method
    if max_seq_len < 2:
        raise ExportError("export_llm: max_seq_len must be at least 2, found %d" % max_seq_len)
    prefill_len = max_prefill_len if max_prefill_len is not None else min(max_seq_len, 128)
    if not 2 <= prefill_len <= max_seq_len:
        raise ExportError("export_llm: max_prefill_len must be in [2, max_seq_len = %d], found %d"
                          % (max_seq_len, prefill_len))
    if prefill_logits not in ("last", "all"):
        raise ExportError("export_llm: prefill_logits must be 'last' or 'all', found %r"
                          % (prefill_logits,))
    model.eval()
    lm = StaticCacheLM(model, max_seq_len, last_logits=prefill_logits == "last").eval()
    vocab = int(getattr(model.config, "vocab_size", 2))
    tokens = (torch.arange(prefill_len, dtype=torch.int64) % vocab).view(1, -1)
    positions = torch.arange(prefill_len, dtype=torch.int64)
    seq = ("seq", 1, prefill_len)
    dynamic = None if static_prefill else {"tokens": {1: seq}, "positions": {0: seq}}
    return {
        "prefill": Method(lm, (tokens, positions), dynamic_dims=dynamic),
        "decode": Method(lm, (tokens[:, :1].clone(), positions[:1].clone())),
    }


def export_llm(model, path, max_seq_len, max_prefill_len=None, backends=None, quantize=None,
               keep_graph=None, verbose=True, prefill_logits="last", static_prefill=False):
    """Exports the transformers causal LM `model` (LlamaForCausalLM, Qwen2ForCausalLM, ...) to
    `path` with a prefill and a decode method sharing a KV cache of max_seq_len positions;
    prefill takes chunks of 1..max_prefill_len tokens (default min(max_seq_len, 128)) and
    returns the logits of the chunk's last position, [1, 1, vocab] (what generation reads: the
    LM head runs on one row), or with prefill_logits="all" of every position, [1, seq, vocab]
    (scoring a text). Decode returns [1, 1, vocab] either way. static_prefill=True: prefill takes
    exactly max_prefill_len tokens (tern generate sends whole chunks through it and the rest of a
    prompt through decode), for models whose sizes derive from the chunk length (mixtures of
    experts). backends / quantize / keep_graph / verbose as export(). Returns the ExportResult."""
    from . import DEFAULT_BACKENDS, export_methods
    methods = llm_methods(model, max_seq_len, max_prefill_len, prefill_logits, static_prefill)
    source = type(model).__module__ + "." + type(model).__qualname__
    try:
        return export_methods(methods, path, DEFAULT_BACKENDS if backends is None else backends,
                              quantize, keep_graph, source, verbose)
    except ExportError as e:
        if static_prefill or "derived from the dynamic dim" not in str(e):
            raise
        raise ExportError("%s; export_llm(..., static_prefill=True) exports prefill for chunks "
                          "of exactly max_prefill_len tokens instead (tern generate feeds the "
                          "rest of a prompt token by token)" % e) from e

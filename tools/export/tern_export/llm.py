"""export_llm: a Hugging Face `transformers` causal language model as one tern program with two
methods that share the KV cache (docs/llm-decoding.md):

    prefill(tokens int64 [1, seq], positions int64 [seq]) -> logits f32 [1, 1, vocab]
        seq is bounded-dynamic (1..max_prefill_len): a prompt chunk at positions p..p+seq-1;
        the logits are the chunk's last position's ([1, seq, vocab], every position's, with
        prefill_logits="all")
    decode(token int64 [1, 1], position int64 [1]) -> logits f32 [1, 1, vocab]

The cache is transformers' own StaticCache (TorchExportableModuleWithStaticCache, the wrapper
transformers provides for export), max_seq_len positions long; its tensors become shared state
(format 1.2), the weights are stored once. `tern generate` feeds the prompt through prefill in
chunks of at most max_prefill_len tokens, then decodes token by token.
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

    def forward(self, tokens, positions):
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


def llm_methods(model, max_seq_len, max_prefill_len=None, prefill_logits="last"):
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
    return {
        "prefill": Method(lm, (tokens, positions),
                          dynamic_dims={"tokens": {1: seq}, "positions": {0: seq}}),
        "decode": Method(lm, (tokens[:, :1].clone(), positions[:1].clone())),
    }


def export_llm(model, path, max_seq_len, max_prefill_len=None, backends=None, quantize=None,
               keep_graph=None, verbose=True, prefill_logits="last"):
    """Exports the transformers causal LM `model` (LlamaForCausalLM, Qwen2ForCausalLM, ...) to
    `path` with a prefill and a decode method sharing a KV cache of max_seq_len positions;
    prefill takes chunks of 1..max_prefill_len tokens (default min(max_seq_len, 128)) and
    returns the logits of the chunk's last position, [1, 1, vocab] (what generation reads: the
    LM head runs on one row), or with prefill_logits="all" of every position, [1, seq, vocab]
    (scoring a text). Decode returns [1, 1, vocab] either way. backends / quantize / keep_graph /
    verbose as export(). Returns the ExportResult."""
    from . import DEFAULT_BACKENDS, export_methods
    methods = llm_methods(model, max_seq_len, max_prefill_len, prefill_logits)
    source = type(model).__module__ + "." + type(model).__qualname__
    return export_methods(methods, path, DEFAULT_BACKENDS if backends is None else backends,
                          quantize, keep_graph, source, verbose)

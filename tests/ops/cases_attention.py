"""scaled_dot_product_attention against PyTorch (F.scaled_dot_product_attention on torch 2.x;
the same math written by hand in double everywhere, since torch 1.13 lacks the function)."""
import math

import torch
import torch.nn.functional as F

from harness import B, Case, D, NONE


def sdpa_by_hand(q, k, v, mask, causal, scale):
    """softmax(q k^T * scale + mask) v in double; a row with nothing attended gives zeros (as
    torch 2.x); causal is top-left aligned (key j <= query i)."""
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    s = torch.matmul(q.double(), k.double().transpose(-2, -1)) * scale
    L, S = q.shape[-2], k.shape[-2]
    if S == 0:
        return torch.zeros(s.shape[:-1] + (v.shape[-1],))
    if causal:
        keep = torch.ones(L, S, dtype=torch.bool).tril()
        s = s.masked_fill(~keep, float("-inf"))
    if mask is not None:
        if mask.dtype == torch.bool:
            s = s.masked_fill(~mask, float("-inf"))
        else:
            s = s + mask.double()
    m = s.amax(dim=-1, keepdim=True)
    m = torch.where(torch.isinf(m) & (m < 0), torch.zeros_like(m), m)
    p = torch.exp(s - m)
    denom = p.sum(dim=-1, keepdim=True)
    p = torch.where(denom > 0, p / torch.where(denom > 0, denom, torch.ones_like(denom)),
                    torch.zeros_like(p))
    return torch.matmul(p, v.double()).float()


def reference(q, k, v, mask, causal, scale):
    return sdpa_by_hand(q, k, v, mask, causal, scale)


def torch_sdpa(q, k, v, mask, causal, scale):
    if scale is None:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, scale=scale)


def cases():
    def r(*shape):
        return torch.randn(tuple(shape))

    refs = [("", reference)]
    if hasattr(F, "scaled_dot_product_attention"):
        refs.append(("_torch", torch_sdpa))
    out = []
    # (q, k, v) shapes: plain 4-D, 3-D, 2-D, L != S, E != Ev, odd sizes, batch broadcast.
    shapes = [
        ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8)),
        ((1, 2, 4, 16), (1, 2, 4, 16), (1, 2, 4, 6)),
        ((3, 9, 5), (3, 11, 5), (3, 11, 7)),
        ((6, 4), (3, 4), (3, 2)),
        ((2, 2, 1, 64), (2, 2, 33, 64), (2, 2, 33, 64)),
        ((2, 4, 3, 8), (2, 1, 5, 8), (2, 1, 5, 8)),
        ((2, 3, 5, 8), (3, 6, 8), (1, 6, 4)),
        ((1, 1, 17, 13), (1, 1, 17, 13), (1, 1, 17, 13)),
    ]
    for tag_ref, ref in refs:
        for qs, ks, vs in shapes:
            q, k, v = r(*qs), r(*ks), r(*vs)
            tag = "%s%s%s" % (qs, ks, tag_ref)
            out.append(Case("tern::scaled_dot_product_attention", [q, k, v, NONE, B(False), NONE],
                            ref, rtol=1e-5, atol=1e-5, name="sdpa" + tag))
            out.append(Case("tern::scaled_dot_product_attention", [q, k, v, NONE, B(True), NONE],
                            ref, rtol=1e-5, atol=1e-5, name="sdpa_causal" + tag))
        q, k, v = r(2, 3, 6, 8), r(2, 3, 6, 8), r(2, 3, 6, 8)
        out.append(Case("tern::scaled_dot_product_attention", [q, k, v, NONE, B(False), D(0.3)],
                        ref, rtol=1e-5, atol=1e-5, name="sdpa_scale" + tag_ref))
        # Causal with L > S and L < S (top-left aligned).
        for L, S in ((7, 3), (3, 7)):
            out.append(Case("tern::scaled_dot_product_attention",
                            [r(2, L, 8), r(2, S, 8), r(2, S, 5), NONE, B(True), NONE], ref,
                            rtol=1e-5, atol=1e-5, name="sdpa_causal_L%d_S%d%s" % (L, S, tag_ref)))
        # Bool masks broadcast from [L, S], [B, 1, L, S], [1, S]; a fully masked row gives 0.
        bm = torch.rand(6, 9) > 0.3
        bm[2] = False
        for mask, mtag in ((bm, "LS"), (torch.rand(2, 1, 6, 9) > 0.5, "B1LS"),
                           (torch.rand(1, 9) > 0.2, "1S")):
            out.append(Case("tern::scaled_dot_product_attention",
                            [r(2, 3, 6, 8), r(2, 3, 9, 8), r(2, 3, 9, 4), mask, B(False), NONE],
                            ref, rtol=1e-5, atol=1e-5, name="sdpa_boolmask_%s%s" % (mtag, tag_ref)))
        # Float masks (added), including -inf entries and a per-head mask.
        fm = r(2, 3, 6, 9)
        fm[0, 1, 2, :4] = float("-inf")
        for mask, mtag in ((fm, "full"), (r(6, 9), "LS"), (r(3, 1, 9), "H1S")):
            out.append(Case("tern::scaled_dot_product_attention",
                            [r(2, 3, 6, 8), r(2, 3, 9, 8), r(2, 3, 9, 4), mask, B(False), D(0.5)],
                            ref, rtol=1e-5, atol=1e-5, name="sdpa_floatmask_%s%s" % (mtag, tag_ref)))
        # Blocks of query rows (at most 64 at once): L not a multiple of the block, L = 1 with
        # S = 1, causal with L != S across blocks, E and S past the kernel's k chunks of 256,
        # Ev not a multiple of the vector width.
        for qs, ks, vs in [((1, 2, 70, 16), (1, 2, 90, 16), (1, 2, 90, 20)),
                           ((2, 1, 16), (2, 1, 16), (2, 1, 8)),
                           ((1, 130, 8), (1, 37, 8), (1, 37, 33)),
                           ((1, 37, 8), (1, 130, 8), (1, 130, 33)),
                           ((1, 20, 300), (1, 40, 300), (1, 40, 7)),
                           ((1, 65, 16), (1, 300, 16), (1, 300, 40))]:
            q, k, v = r(*qs), r(*ks), r(*vs)
            for causal in (False, True):
                out.append(Case("tern::scaled_dot_product_attention",
                                [q, k, v, NONE, B(causal), NONE], ref, rtol=1e-5, atol=1e-5,
                                name="sdpa_block%s%s%s%s" % ("_causal" if causal else "", qs, ks,
                                                             tag_ref)))
        # Masks read across blocks: bool [L, S] with a fully masked row in the second block,
        # bool [B, 1, 1, S], float [H, 1, S] with -inf entries.
        bm = torch.rand(80, 45) > 0.3
        bm[70] = False
        fm = r(3, 1, 45)
        fm[1, 0, :5] = float("-inf")
        for mask, mtag in ((bm, "LS"), (torch.rand(2, 1, 1, 45) > 0.4, "B11S"), (fm, "H1S")):
            out.append(Case("tern::scaled_dot_product_attention",
                            [r(2, 3, 80, 8), r(2, 3, 45, 8), r(2, 3, 45, 6), mask, B(False),
                             NONE], ref, rtol=1e-5, atol=1e-5,
                            name="sdpa_block_mask_%s%s" % (mtag, tag_ref)))
    # Empty sizes: no keys gives zeros; no queries gives an empty output.
    out.append(Case("tern::scaled_dot_product_attention",
                    [r(2, 4, 8), r(2, 0, 8), r(2, 0, 3), NONE, B(False), NONE], reference,
                    name="sdpa_no_keys"))
    out.append(Case("tern::scaled_dot_product_attention",
                    [r(2, 0, 8), r(2, 5, 8), r(2, 5, 3), NONE, B(False), NONE], reference,
                    name="sdpa_no_queries"))
    # A longer sequence.
    out.append(Case("tern::scaled_dot_product_attention",
                    [r(1, 2, 64, 32), r(1, 2, 300, 32), r(1, 2, 300, 32), NONE, B(False), NONE],
                    reference, rtol=1e-5, atol=1e-5, name="sdpa_long"))
    return out

"""Ordering, counting and grouped products against PyTorch: argsort, topk_indices, histc,
grouped_mm (docs/ops.md) -- what a mixture-of-experts layer routes tokens with."""
import torch

from harness import B, Case, D, I


def cases():
    out = []

    def r(*shape):
        return torch.randn(tuple(shape))

    # argsort: the stable order (torch.sort(stable=True)); ties in ints keep their positions;
    # NaN above every number; every dim of a 3-D tensor; descending too.
    def sort_ref(x, dim, descending):
        return torch.sort(x, dim=dim, descending=descending, stable=True).indices

    for shape, dim in [((7,), 0), ((3, 9), 1), ((3, 9), 0), ((2, 5, 4), 1), ((2, 5, 4), -1),
                       ((1, 300), 1), ((4, 1), 1)]:
        for desc in (False, True):
            out.append(Case("tern::argsort", [r(*shape), I(dim), B(desc)], sort_ref,
                            name="argsort%s,%d%s" % (shape, dim, "d" if desc else "")))
    ties = torch.randint(0, 4, (40,), dtype=torch.int64)
    for desc in (False, True):
        out.append(Case("tern::argsort", [ties, I(0), B(desc)], sort_ref,
                        name="argsort_int_ties%s" % ("d" if desc else "")))
        out.append(Case("tern::argsort", [ties.to(torch.int32).view(5, 8), I(0), B(desc)],
                        sort_ref, name="argsort_i32_ties_dim0%s" % ("d" if desc else "")))
    nan = torch.tensor([3.0, float("nan"), -1.0, float("inf"), float("nan"), -float("inf"), 0.0])
    for desc in (False, True):
        out.append(Case("tern::argsort", [nan, I(0), B(desc)], sort_ref,
                        name="argsort_nan_inf%s" % ("d" if desc else "")))

    # topk_indices: torch.topk's indices (distinct values: its order of ties is unspecified).
    def topk_ref(x, k, dim, largest):
        return torch.topk(x, k, dim=dim, largest=largest, sorted=True).indices

    for shape, k, dim in [((16, 8), 2, -1), ((16, 8), 8, 1), ((5, 6, 7), 3, 1), ((5, 6, 7), 1, 0),
                          ((1, 1000), 50, 1), ((3, 4), 0, 1)]:
        for largest in (True, False):
            out.append(Case("tern::topk_indices", [r(*shape), I(k), I(dim), B(largest)],
                            topk_ref, name="topk%s,k%d,%d%s" % (shape, k, dim,
                                                                "" if largest else "_small")))
    out.append(Case("tern::topk_indices",
                    [torch.tensor([1.0, float("nan"), 5.0, -2.0]), I(2), I(0), B(True)], topk_ref,
                    name="topk_nan_first"))
    out.append(Case("tern::topk_indices",
                    [torch.randperm(30).to(torch.int64), I(5), I(0), B(True)], topk_ref,
                    name="topk_i64"))

    # histc: integer-valued expert ids on the bins' edges (Hugging Face's grouped experts),
    # values out of range, the top edge, the data's own range (min == max), NaN ignored.
    def histc_ref(x, bins, lo, hi):
        return torch.histc(x, bins=bins, min=lo, max=hi)

    ids = torch.randint(0, 8, (64,)).float()
    out.append(Case("tern::histc", [ids, I(8), D(0.0), D(7.0)], histc_ref, rtol=0, atol=0,
                    name="histc_expert_ids"))
    out.append(Case("tern::histc", [ids, I(3), D(1.0), D(5.5)], histc_ref, rtol=0, atol=0,
                    name="histc_partial_range"))
    out.append(Case("tern::histc", [r(1000), I(17), D(-2.0), D(2.0)], histc_ref, rtol=0,
                    atol=0, name="histc_gaussian"))
    edges = torch.linspace(-1.0, 1.0, 11)
    out.append(Case("tern::histc", [edges, I(10), D(-1.0), D(1.0)], histc_ref, rtol=0, atol=0,
                    name="histc_on_the_edges"))
    out.append(Case("tern::histc", [r(50), I(5), D(0.0), D(0.0)], histc_ref, rtol=0, atol=0,
                    name="histc_data_range"))
    out.append(Case("tern::histc", [torch.full((6,), 2.5), I(4), D(0.0), D(0.0)], histc_ref,
                    rtol=0, atol=0, name="histc_constant_data"))
    if int(torch.__version__.split(".")[0]) >= 2:  # 1.13 counts a NaN into a bin
        with_nan = torch.tensor([0.5, float("nan"), 1.5, 2.0, -3.0])
        out.append(Case("tern::histc", [with_nan, I(2), D(0.0), D(2.0)], histc_ref, rtol=0,
                        atol=0, name="histc_nan_ignored"))

    # grouped_mm: rows cut by running ends; an empty group; rows after the last end are zeros.
    def grouped_ref(x, w, offs):
        y = torch.zeros(x.shape[0], w.shape[2])
        start = 0
        for e, end in enumerate(offs.tolist()):
            if end > start:
                y[start:end] = x[start:end].double().matmul(w[e].double()).float()
            start = end
        return y

    for s, k, n, offs, dt in [(32, 64, 48, [5, 5, 20, 32], torch.int32),
                              (10, 7, 9, [0, 3, 8], torch.int64),
                              (6, 16, 17, [2, 4], torch.int32),
                              (1, 3, 5, [1], torch.int64)]:
        e = len(offs)
        out.append(Case("tern::grouped_mm",
                        [r(s, k), r(e, k, n), torch.tensor(offs, dtype=dt)], grouped_ref,
                        rtol=1e-5, atol=1e-5, name="grouped_mm%d,%d,%d,%s" % (s, k, n, offs)))
    return out

"""attnjit.paged_attention's results against the plain PyTorch reference
and against varlen_attention on the contiguous equivalent (GPU); the
argument checks are test_paged_args.py's.

Run: python -m pytest python/tests (with the package installed, or with
PYTHONPATH=<build>/python after a CMake build with -DATTNJIT_BUILD_PYTHON=ON).
"""

import random

import pytest

from paged_support import (BOUND, LSE_BOUND, NAN, _cu, attnjit, gather_paged, gpu,
                           lse_error, relative_error, varlen_attention_reference)

torch = pytest.importorskip("torch")


# ---- results against the reference, on the GPU --------------------------

def _random_cache(num_pages, page_size, hkv, d, dtype, layout, gen):
    """(k_cache, v_cache) [num_pages, page_size, Hkv, D] in one of the three
    layouts an engine uses."""
    def randn(*shape):
        return torch.randn(*shape, device="cuda", generator=gen).to(dtype)

    if layout == "separate":
        return (randn(num_pages, page_size, hkv, d),
                randn(num_pages, page_size, hkv, d))
    if layout == "combined":  # one [num_pages, 2, page_size, Hkv, D] cache
        cache = randn(num_pages, 2, page_size, hkv, d)
        return cache[:, 0], cache[:, 1]
    if layout == "heads_outer":  # [num_pages, Hkv, page_size, D] per tensor
        return (randn(num_pages, hkv, page_size, d).transpose(1, 2),
                randn(num_pages, hkv, page_size, d).transpose(1, 2))
    raise ValueError(layout)


class Paged:
    """A batch over a paged cache whose block table is shuffled, a page
    shared by two sequences where asked (prefix caching), and every cache
    row that no sequence reads set to NaN (spare pages, the tail of each
    sequence's last page); a row's unread block-table entries point to a
    NaN page. A kernel that lets any of those into a product returns NaN.
    """

    def __init__(self, lens_q, lens_k, hq=4, hkv=2, d=64, page_size=16,
                 dtype=torch.bfloat16, layout="separate", share=True,
                 spare_pages=2, extra_columns=0, table_view=False, seed=0):
        assert all(0 <= n_q <= n_k for n_q, n_k in zip(lens_q, lens_k))
        self.lens_q, self.lens_k = list(lens_q), list(lens_k)
        self.page_size = page_size
        gen = torch.Generator(device="cuda")
        gen.manual_seed(seed)
        rng = random.Random(seed)
        pages_of = [-(-n // page_size) for n in lens_k]
        # Sequences 0 and 1 share their first page, as prefix caching does
        # with a common prompt prefix (a full page of the same tokens).
        self.shared = (share and len(lens_k) >= 2 and lens_k[0] >= page_size
                       and lens_k[1] >= page_size)
        owned = sum(pages_of) - int(self.shared)
        num_pages = owned + spare_pages
        physical = list(range(num_pages))
        rng.shuffle(physical)
        spare = physical[owned:]
        width = max(pages_of + [1]) + extra_columns
        table = [[rng.choice(spare)] * width for _ in lens_k]
        taken = iter(physical[:owned])
        for b, pages in enumerate(pages_of):
            for i in range(pages):
                table[b][i] = (table[0][0] if self.shared and b == 1 and i == 0
                               else next(taken))
        self.table_list = table
        self.k_cache, self.v_cache = _random_cache(num_pages, page_size, hkv,
                                                   d, dtype, layout, gen)
        read = torch.zeros(num_pages, page_size, dtype=torch.bool)
        for b, n_k in enumerate(lens_k):
            j = torch.arange(n_k)
            read[torch.tensor(table[b], dtype=torch.long)[j // page_size],
                 j % page_size] = True
        self.poison(~read)
        if table_view:  # a view of a wider table: row stride > columns
            wide = torch.full((len(lens_k), width + 5), spare[0],
                              dtype=torch.int32)
            wide[:, :width] = torch.tensor(table, dtype=torch.int32).view(
                len(lens_k), width)
            self.block_table = wide.cuda()[:, :width]
        else:
            self.block_table = torch.tensor(table, dtype=torch.int32,
                                            device="cuda").view(len(lens_k),
                                                                width)
        self.q = torch.randn(sum(lens_q), hq, d, device="cuda",
                             generator=gen).to(dtype)
        self.cu_seqlens_q = _cu(lens_q, "cuda")
        self.seqused_k = torch.tensor(lens_k, dtype=torch.int32, device="cuda")
        self.max_seqlen_q = max(lens_q + [0])
        self.max_seqlen_k = max(lens_k + [0])

    def poison(self, rows):
        """NaN into the cache rows selected by a [num_pages, page_size] mask
        (written through the views into their storage)."""
        rows = rows.to("cuda")
        self.k_cache[rows] = NAN
        self.v_cache[rows] = NAN

    def args(self):
        return dict(q=self.q, k_cache=self.k_cache, v_cache=self.v_cache,
                    block_table=self.block_table,
                    cu_seqlens_q=self.cu_seqlens_q, seqused_k=self.seqused_k,
                    max_seqlen_q=self.max_seqlen_q,
                    max_seqlen_k=self.max_seqlen_k)

    def gather(self):
        """The contiguous equivalent: k, v [sum of seqused_k, Hkv, D] and
        cu_seqlens_k, read through the block table."""
        return gather_paged(self.k_cache, self.v_cache, self.block_table,
                            self.seqused_k)


def _sinks(hq, seed=0):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed + 1000)
    return torch.rand(hq, device="cuda", generator=gen) * 4 - 1  # [-1, 3]


def _ranges(rows):
    return torch.tensor(rows, dtype=torch.int32, device="cuda")


def _compare(problem, return_lse=False, against_varlen=True, **mode):
    """Runs paged_attention into a NaN-filled out and compares it with the
    reference on the gathered keys and, with the same kernel flags, with
    varlen_attention on them. Returns (out, lse)."""
    assert "causal" in mode  # the two APIs' defaults differ
    q = problem.q
    out = torch.full_like(q, NAN)
    result = attnjit.paged_attention(**problem.args(), **mode, out=out,
                                     return_lse=return_lse)
    torch.cuda.synchronize()
    got, lse = result if return_lse else (result, None)
    assert got.data_ptr() == out.data_ptr()
    k, v, cu_k = problem.gather()
    ref_out, ref_lse = varlen_attention_reference(q, k, v,
                                                  problem.cu_seqlens_q, cu_k,
                                                  **mode)
    bound = BOUND[q.dtype]
    err = relative_error(got, ref_out)
    assert err <= bound, f"relative error {err:.3e} against the reference"
    if lse is not None:
        assert lse.shape == ref_lse.shape and lse.dtype == torch.float32
        assert lse_error(lse, ref_lse) <= LSE_BOUND
    if against_varlen:
        contiguous = attnjit.varlen_attention(
            q, k, v, problem.cu_seqlens_q, cu_k, problem.max_seqlen_q,
            problem.max_seqlen_k, return_lse=return_lse, **mode)
        torch.cuda.synchronize()
        want, want_lse = (contiguous if return_lse else (contiguous, None))
        err = relative_error(got, want)
        assert err <= bound, f"relative error {err:.3e} against varlen"
        if lse is not None:
            assert lse_error(lse, want_lse) <= LSE_BOUND
    return got, lse


# A mixed batch: a chunk of 57 new tokens over a cached prefix (sharing its
# first page with the next sequence), decode steps (one query) at several
# lengths, a whole prompt, empty sequences, a one-token sequence, a
# sequence with cached keys and no new token, lengths at and just past page
# boundaries of 16 and 256.
MIXED_Q = [57, 1, 300, 0, 1, 1, 0, 1, 1]
MIXED_K = [400, 700, 300, 0, 1, 17, 33, 256, 513]
# Spans in key positions: [300, 380] of sequence 0 straddles its chunk's
# start (position 343); [10, 99] lies in the cached prefix; sequence 1's
# span ends at its decode query; sequence 2 starts with an image.
SPANS = [[0, 300, 380], [0, 10, 99], [1, 690, 699], [2, 0, 79],
         [5, 3, 12]]

CASES = {
    "causal_gqa_d128": (dict(hq=8, hkv=2, d=128), dict(causal=True)),
    "full_d64": (dict(hq=4, hkv=4, d=64), dict(causal=False)),
    "gpt_oss_window_null_logit_d64": (
        dict(hq=16, hkv=2, d=64),
        dict(causal=True, window_size=(127, 0), sinks_mode="null_logit")),
    "mimo_window_bias_key0_d80": (
        dict(hq=4, hkv=4, d=80),
        dict(causal=False, window_size=(64, 64), sinks_mode="bias_key0")),
    "causal_bias_key0_d128": (dict(hq=4, hkv=2, d=128),
                              dict(causal=True, sinks_mode="bias_key0")),
    "softcap_d96": (dict(hq=4, hkv=1, d=96), dict(causal=True, softcap=5.0)),
    "gemma_spans_clamp_d256": (
        dict(hq=4, hkv=2, d=256),
        dict(causal=True, window_size=(31, 0), mm_prefix_ranges=SPANS,
             mm_prefix_clamp=True)),
    "gemma_spans_no_clamp_d256": (
        dict(hq=4, hkv=2, d=256),
        dict(causal=True, window_size=(31, 0), mm_prefix_ranges=SPANS)),
    "spans_unbounded_window_d128": (
        dict(hq=2, hkv=1, d=128),
        dict(causal=True, mm_prefix_ranges=SPANS)),
    "window_zero_d64": (dict(hq=4, hkv=2, d=64),
                        dict(causal=True, window_size=(0, 0))),
    "fp16_window_d128": (dict(hq=2, hkv=1, d=128, dtype=torch.float16),
                         dict(causal=False, window_size=(20, 5))),
    "chunk_d192": (dict(hq=4, hkv=1, d=192), dict(causal=True)),
}


def _mode(mode, hq, seed=0):
    mode = dict(mode)
    if mode.get("sinks_mode", "none") != "none":
        mode["sinks"] = _sinks(hq, seed)
    if "mm_prefix_ranges" in mode:
        mode["mm_prefix_ranges"] = _ranges(mode["mm_prefix_ranges"])
    return mode


@gpu
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("page_size", [16, 256])
@pytest.mark.parametrize("return_lse", [False, True])
def test_against_reference(name, page_size, return_lse):
    shape, mode = CASES[name]
    problem = Paged(MIXED_Q, MIXED_K, page_size=page_size, seed=7, **shape)
    assert problem.shared
    _compare(problem, return_lse=return_lse,
             **_mode(mode, problem.q.shape[1]))


@gpu
@pytest.mark.parametrize("layout", ["separate", "combined", "heads_outer"])
@pytest.mark.parametrize("page_size", [16, 64, 256])
def test_kv_layouts(layout, page_size):
    problem = Paged(MIXED_Q, MIXED_K, hq=8, hkv=2, d=128, page_size=page_size,
                    layout=layout, table_view=layout == "combined",
                    extra_columns=3, seed=11)
    _compare(problem, return_lse=True, causal=True)
    _compare(problem, causal=True, window_size=(31, 0),
             mm_prefix_ranges=_ranges(SPANS), mm_prefix_clamp=True)


@gpu
def test_the_shared_page_is_one_page():
    # Two sequences over one prefix page and the same queries at the same
    # positions see the same keys there: the rows agree.
    problem = Paged([16, 16], [16, 16], hq=4, hkv=2, d=64, page_size=16,
                    seed=3)
    assert problem.shared and problem.table_list[0][0] == \
        problem.table_list[1][0]
    problem.q[16:] = problem.q[:16]
    out, _ = _compare(problem, causal=True)
    assert torch.equal(out[:16], out[16:])


@gpu
@pytest.mark.parametrize("page_size", [16, 256])
def test_decode_batch(page_size):
    # One query per sequence; lengths around page boundaries; GQA 8.
    lens_k = [1, 15, 16, 17, 255, 256, 257, 1000, 4097]
    problem = Paged([1] * len(lens_k), lens_k, hq=64, hkv=8, d=64,
                    page_size=page_size, seed=5)
    sinks = _sinks(64)
    _compare(problem, return_lse=True, causal=True, window_size=(127, 0),
             sinks=sinks, sinks_mode="null_logit")
    _compare(problem, causal=True)


@gpu
@pytest.mark.parametrize("page_size", [16, 256])
def test_chunked_prefill_matches_one_pass(page_size):
    """A prompt prefilled in two chunks over the cache, as an engine does:
    the second chunk's keys are written into the cache only after the first
    chunk ran (NaN before), and the two chunks together equal one pass,
    except where the boundary cuts an image: the image's tokens in the first
    chunk see only the part of their image the cache holds (spans are
    bidirectional, so one pass lets them see its later tokens too)."""
    n, first, image = 600, 350, (300, 420)
    problem = Paged([n], [n], hq=8, hkv=4, d=128, page_size=page_size,
                    seed=9)
    mode = dict(causal=True, window_size=(200, 0),
                mm_prefix_ranges=_ranges([[0, *image]]),
                mm_prefix_clamp=True)
    one_pass, _ = _compare(problem, **mode)
    keys = problem.k_cache.clone(), problem.v_cache.clone()
    table = problem.block_table[0].long()
    late = torch.arange(first, n, device="cuda")
    late_rows = (table[late // page_size], late % page_size)
    problem.k_cache[late_rows] = NAN
    problem.v_cache[late_rows] = NAN
    q = problem.q
    chunks = []
    for start, stop in ((0, first), (first, n)):
        if start:
            problem.k_cache[late_rows] = keys[0][late_rows]
            problem.v_cache[late_rows] = keys[1][late_rows]
        # The image as far as the cache holds it.
        step = dict(mode, mm_prefix_ranges=_ranges([[0, image[0],
                                                     min(image[1], stop - 1)]]))
        out = torch.full_like(q[start:stop], NAN)
        chunks.append(attnjit.paged_attention(
            q[start:stop], problem.k_cache, problem.v_cache,
            problem.block_table, _cu([stop - start], "cuda"),
            torch.tensor([stop], dtype=torch.int32, device="cuda"),
            stop - start, stop, out=out, **step))
    torch.cuda.synchronize()
    chunked = torch.cat(chunks).float()
    one_pass = one_pass.float()
    whole = torch.ones(n, dtype=torch.bool, device="cuda")
    whole[image[0]:first] = False  # the cut image's rows in the first chunk
    assert relative_error(chunked[whole], one_pass[whole]) <= BOUND[q.dtype]
    assert relative_error(chunked[~whole], one_pass[~whole]) > BOUND[q.dtype]
    k, v, cu_k = problem.gather()
    prefix, _ = varlen_attention_reference(
        q[:first], k[:first], v[:first], _cu([first], "cuda"),
        _cu([first], "cuda"), causal=True, window_size=(200, 0),
        mm_prefix_ranges=_ranges([[0, image[0], first - 1]]),
        mm_prefix_clamp=True)
    assert relative_error(chunked[:first], prefix) <= BOUND[q.dtype]


@gpu
def test_empty_batches():
    problem = Paged([0, 0], [0, 5], page_size=16, seed=1)
    out, lse = attnjit.paged_attention(**problem.args(), causal=True,
                                       return_lse=True)
    assert out.shape == (0, 4, 64) and lse.shape == (4, 0)
    none = Paged([], [], page_size=16, spare_pages=1, seed=1)
    assert none.block_table.shape == (0, 1)
    out = attnjit.paged_attention(**none.args())
    assert out.shape == (0, 4, 64)


@gpu
def test_out_view_and_nothing_else_written():
    problem = Paged([70, 1], [300, 40], hq=4, hkv=2, d=64, page_size=16,
                    seed=4)
    out_full = torch.zeros(71, 8, 64, device="cuda").bfloat16()
    out = out_full[:, 2:6]
    result = attnjit.paged_attention(**problem.args(), causal=True, out=out)
    assert result.data_ptr() == out.data_ptr()
    k, v, cu_k = problem.gather()
    ref, _ = varlen_attention_reference(problem.q, k, v, problem.cu_seqlens_q,
                                        cu_k, causal=True)
    assert relative_error(out, ref) <= 1e-2
    assert out_full[:, :2].abs().sum().item() == 0
    assert out_full[:, 6:].abs().sum().item() == 0


@gpu
def test_cpu_ranges_are_checked_and_used():
    problem = Paged([40], [120], hq=2, hkv=1, page_size=16, seed=6)
    bad = torch.tensor([[0, 10, 30], [0, 20, 40]], dtype=torch.int32)
    with pytest.raises(ValueError, match="paged_attention: mm_prefix_ranges: "
                                         "spans .* overlap"):
        attnjit.paged_attention(**problem.args(), mm_prefix_ranges=bad)
    good = torch.tensor([[0, 10, 30], [0, 70, 100]], dtype=torch.int32)
    _compare(problem, causal=True, mm_prefix_ranges=good)


@gpu
def test_check_true_reads_device_values():
    problem = Paged([5, 7], [20, 30], hq=2, hkv=1, page_size=16, seed=8)
    attnjit.paged_attention(**problem.args(), check=True)
    args = problem.args()
    args["seqused_k"] = torch.tensor([20, 6], dtype=torch.int32, device="cuda")
    with pytest.raises(ValueError, match=r"seqused_k\[1\] = 6 is below the 7"):
        attnjit.paged_attention(**args, check=True)
    args = problem.args()
    args["max_seqlen_k"] = 25
    with pytest.raises(ValueError, match=r"max_seqlen_k \(25\) is below "
                                         r"seqused_k\[1\] = 30"):
        attnjit.paged_attention(**args, check=True)
    args = problem.args()
    table = problem.block_table.clone()
    table[1, 1] = problem.k_cache.shape[0]
    args["block_table"] = table
    with pytest.raises(ValueError, match=r"block_table\[1, 1\] = \d+ is not a "
                                         r"page of the cache"):
        attnjit.paged_attention(**args, check=True)
    args = problem.args()
    args["max_seqlen_q"] = 6
    with pytest.raises(ValueError, match="below the longest sequence"):
        attnjit.paged_attention(**args, check=True)
    with pytest.raises(ValueError, match="past the 30 keys of sequence 1"):
        attnjit.paged_attention(**problem.args(), check=True,
                                mm_prefix_ranges=_ranges([[1, 20, 30]]))


@gpu
def test_no_backward():
    problem = Paged([5], [20], hq=2, hkv=1, page_size=16)
    problem.q.requires_grad_()
    with pytest.raises(RuntimeError, match="paged_attention: there is no "
                                           "backward"):
        attnjit.paged_attention(**problem.args())
    with torch.no_grad():
        attnjit.paged_attention(**problem.args())


@gpu
def test_cache_hits_after_the_first_call():
    problem = Paged([3], [33], hq=2, hkv=1, page_size=16)
    attnjit.paged_attention(**problem.args(), softcap=3.0)
    before = attnjit.cache_stats()
    attnjit.paged_attention(**problem.args(), softcap=3.0)
    assert attnjit.cache_stats() == before


@gpu
def test_cuda_graph_capture_replays_with_new_lengths_and_tables():
    """Captured once; replayed as decode steps in which the keys grow by one
    (written into the cache), seqused_k and the block table change in
    place, and max_seqlen_k stays the table's capacity."""
    page_size, hq, hkv, d = 16, 8, 2, 64
    lens = [5, 31, 100]
    capacity = 160
    problem = Paged([1, 1, 1], [n + 3 for n in lens], hq=hq, hkv=hkv, d=d,
                    page_size=page_size, share=False,
                    extra_columns=capacity // page_size, seed=12)
    # Before capture: the keys of the first step.
    problem.seqused_k.copy_(torch.tensor(lens, dtype=torch.int32))
    sinks = _sinks(hq)
    mode = dict(causal=True, window_size=(63, 0), sinks=sinks,
                sinks_mode="null_logit")
    args = problem.args()
    args["max_seqlen_k"] = capacity
    attnjit.paged_attention(**args, **mode)  # compile and load first
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = attnjit.paged_attention(**args, **mode)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(13)
    for step in range(3):
        problem.seqused_k.copy_(torch.tensor([n + step for n in lens],
                                             dtype=torch.int32))
        problem.q.copy_(torch.randn(problem.q.shape, device="cuda",
                                    generator=gen))
        if step == 2:
            # Move sequence 2's first page elsewhere (same contents).
            spare = problem.table_list[0][-1]
            first = problem.table_list[2][0]
            problem.k_cache[spare] = problem.k_cache[first]
            problem.v_cache[spare] = problem.v_cache[first]
            problem.block_table[2, 0] = spare
        graph.replay()
        torch.cuda.synchronize()
        k, v, cu_k = problem.gather()
        ref, _ = varlen_attention_reference(problem.q, k, v,
                                            problem.cu_seqlens_q, cu_k, **mode)
        assert relative_error(out, ref) <= 1e-2, step


@gpu
def test_cuda_graph_capture_of_a_split_decode():
    """A decode whose keys are split over blocks (two sequences of
    thousands of keys leave most SMs idle otherwise), captured on the
    capture's own stream with no eager call there: the parts' workspace
    comes from the graph's pool, zeroed in the graph, and every replay
    (new queries, fewer keys) matches the reference."""
    problem = Paged([1, 1], [8000, 5000], hq=8, hkv=2, d=128, page_size=16,
                    share=False, seed=21)
    sinks = _sinks(8)
    mode = dict(causal=True, sinks=sinks, sinks_mode="null_logit")
    args = problem.args()
    attnjit.paged_attention(**args, **mode, return_lse=True)  # compile, load
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, lse = attnjit.paged_attention(**args, **mode, return_lse=True)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(22)
    for step, lens in enumerate([[8000, 5000], [7000, 5000], [8000, 1]]):
        problem.seqused_k.copy_(torch.tensor(lens, dtype=torch.int32))
        problem.q.copy_(torch.randn(problem.q.shape, device="cuda",
                                    generator=gen))
        graph.replay()
        torch.cuda.synchronize()
        k, v, cu_k = problem.gather()
        ref, ref_lse = varlen_attention_reference(problem.q, k, v,
                                                  problem.cu_seqlens_q, cu_k,
                                                  **mode)
        assert relative_error(out, ref) <= BOUND[out.dtype], step
        assert lse_error(lse, ref_lse) <= LSE_BOUND, step


@gpu
@pytest.mark.parametrize("page_size,split", [(16, True), (64, False)])
def test_fp8_cache(page_size, split):
    """An e4m3 cache with per-tensor scales against the reference over the
    dequantized keys and values (the conversion is exact, so the bound is
    the 16-bit one): decodes that split their keys, or chunks, with a
    window and null-logit sinks; NaN (0x7F) in every unread cache row."""
    lens_q, lens_k = ([1, 1, 1], [3000, 17, 5000]) if split else ([40, 7], [300, 90])
    problem = Paged(lens_q, lens_k, hq=16, hkv=2, d=128, page_size=page_size,
                    seed=31)
    k_scale = torch.tensor([0.5], device="cuda")
    v_scale = torch.tensor([1.25], device="cuda")
    k8 = (problem.k_cache.float() / k_scale).to(torch.float8_e4m3fn)
    v8 = (problem.v_cache.float() / v_scale).to(torch.float8_e4m3fn)
    mode = dict(causal=True, window_size=(700, 0), sinks=_sinks(16),
                sinks_mode="null_logit")
    args = problem.args()
    args.update(k_cache=k8, v_cache=v8)
    out, lse = attnjit.paged_attention(**args, **mode, k_scale=k_scale,
                                       v_scale=v_scale, return_lse=True)
    torch.cuda.synchronize()
    k_deq = (k8.float() * k_scale).to(problem.q.dtype)  # exact in bf16
    v_deq = (v8.float() * v_scale).to(problem.q.dtype)
    k, v, cu_k = gather_paged(k_deq, v_deq, problem.block_table,
                              problem.seqused_k)
    ref, ref_lse = varlen_attention_reference(problem.q, k, v,
                                              problem.cu_seqlens_q, cu_k,
                                              **mode)
    assert relative_error(out, ref) <= BOUND[out.dtype]
    assert lse_error(lse, ref_lse) <= LSE_BOUND


@gpu
def test_torch_compile_fullgraph():
    problem = Paged([90, 1, 40], [200, 77, 40], hq=4, hkv=1, d=128,
                    page_size=16, layout="combined", seed=2)
    sinks = _sinks(4)
    ranges = _ranges([[0, 100, 150]])

    def layer(q, k_cache, v_cache, table, cu_q, used, sinks, ranges):
        o, lse = attnjit.paged_attention(
            q * 1.0, k_cache, v_cache, table, cu_q, used, 90, 200,
            causal=True, window_size=(31, 0), sinks=sinks,
            sinks_mode="bias_key0", mm_prefix_ranges=ranges,
            mm_prefix_clamp=True, return_lse=True)
        return o.float().sum(-1), lse

    compiled = torch.compile(layer, fullgraph=True)
    inputs = (problem.q, problem.k_cache, problem.v_cache,
              problem.block_table, problem.cu_seqlens_q, problem.seqused_k,
              sinks, ranges)
    got, got_lse = compiled(*inputs)
    want, want_lse = layer(*inputs)
    torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(got_lse, want_lse)


@gpu
def test_opcheck():
    problem = Paged([40, 1], [60, 24], hq=4, hkv=2, d=64, page_size=16,
                    seed=4)
    sinks = _sinks(4)
    op_args = (problem.q, problem.k_cache, problem.v_cache,
               problem.block_table, problem.cu_seqlens_q, problem.seqused_k,
               40, 60, None, True, 15, 0, sinks, "null_logit", None, False,
               0.0, True, False)
    torch.library.opcheck(torch.ops.attnjit.paged_attention.default, op_args)


@gpu
def test_launch_follows_the_tensors_device():
    if torch.cuda.device_count() < 2:
        pytest.skip("one GPU: the cross-device path needs two")
    problem = Paged([30, 1], [64, 33], hq=2, hkv=1, page_size=16)
    args = {n: (a.to("cuda:1") if isinstance(a, torch.Tensor) else a)
            for n, a in problem.args().items()}
    out = attnjit.paged_attention(**args, causal=True)
    torch.cuda.synchronize(1)
    assert out.device == torch.device("cuda:1")
    k, v, cu_k = problem.gather()
    ref, _ = varlen_attention_reference(problem.q, k, v, problem.cu_seqlens_q,
                                        cu_k, causal=True)
    assert relative_error(out.cpu(), ref.cpu()) <= 1e-2


# Last in this file: a kernel that reads past a row's pages would read these
# entries, and an out-of-range page may fault the CUDA context.
@gpu
@pytest.mark.parametrize("padding", [-1, 2**31 - 1])
def test_unread_block_table_entries_may_hold_anything(padding):
    problem = Paged([1, 30, 1], [17, 40, 256], hq=4, hkv=2, d=64,
                    page_size=16, extra_columns=2, seed=10)
    for b, n_k in enumerate(problem.lens_k):
        problem.block_table[b, -(-n_k // 16):] = padding
    _compare(problem, causal=True, window_size=(127, 0))

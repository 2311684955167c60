"""Value heads narrower than the query and key heads (the head_dim_v flag:
DeepSeek's MHA prefill, q and k of 192, v and o of 128), as its users pass
them: v (or v_cache) simply has the narrower last dimension, and the output
follows v. The argument checks run without a GPU; the launches against the
reference (which reads Dv from v) on sm_90a, contiguous, chunked over a
paged prefix, and decoding (split-KV).
"""

import pytest

from paged_support import (BOUND, NAN, _cu, attnjit, gpu, into_pages,
                           relative_error, varlen_attention_reference)

torch = pytest.importorskip("torch")

D, DV = 192, 128


def _qkv(lengths_q, lengths_k, hq, hkv, device, seed=0, dv=DV):
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)

    def randn(n, h, d):
        return torch.randn(n, h, d, device=device, generator=gen).to(torch.bfloat16)
    return (randn(sum(lengths_q), hq, D), randn(sum(lengths_k), hkv, D),
            randn(sum(lengths_k), hkv, dv))


def _raises(match, **change):
    args = dict(zip(("q", "k", "v"), _qkv([8], [8], 2, 2, "cpu")))
    args.update(cu_seqlens_q=_cu([8]), cu_seqlens_k=_cu([8]), max_seqlen_q=8,
                max_seqlen_k=8)
    args.update(change)
    with pytest.raises(ValueError, match=match):
        attnjit.varlen_attention(**args)


def test_v_may_be_narrower_only_as_the_spec_allows():
    # A width the spec does not take, and one wider than q and k.
    _raises(r"head_dim 64 under q's and k's 192", v=torch.zeros(8, 2, 64, dtype=torch.bfloat16))
    _raises(r"head_dim 256 under", v=torch.zeros(8, 2, 256, dtype=torch.bfloat16))
    # v's rows and heads are k's.
    _raises(r"v must have k's shape", v=torch.zeros(8, 1, DV, dtype=torch.bfloat16))
    # out follows v.
    _raises(r"out must have q's rows and heads and v's head_dim \[8, 2, 128\]",
            out=torch.zeros(8, 2, D, dtype=torch.bfloat16))


@gpu
@pytest.mark.parametrize("causal", [True, False])
def test_varlen_prefill(causal):
    lengths = [300, 1, 700]
    q, k, v = _qkv(lengths, lengths, 8, 8, "cuda", seed=1)
    cu = _cu(lengths, "cuda")
    out = torch.full((q.shape[0], q.shape[1], DV), NAN, dtype=q.dtype, device="cuda")
    _, lse = attnjit.varlen_attention(q, k, v, cu, cu, max(lengths), max(lengths),
                                      causal=causal, return_lse=True, out=out)
    want, want_lse = varlen_attention_reference(q, k, v, cu, cu, causal=causal)
    assert out.shape[-1] == DV
    assert relative_error(out, want) <= BOUND[torch.bfloat16]
    assert torch.allclose(lse, want_lse, atol=2e-2)


@gpu
@pytest.mark.parametrize("page_size", [16, 64])
@pytest.mark.parametrize("steps", ["chunk", "decode"])
def test_paged_chunk_and_decode(steps, page_size):
    """A chunk of new tokens over a cached prefix (DeepSeek's chunked MHA
    prefill), and one-token decodes long enough to split."""
    if steps == "chunk":
        lengths_k, lengths_q = [1500, 600], [512, 600]
    else:
        lengths_k, lengths_q = [9000, 4000, 17], [1, 1, 1]
    q, k, v = _qkv(lengths_q, lengths_k, 16, 16, "cuda", seed=2)
    k_cache, v_cache, table = into_pages(k, v, lengths_k, page_size, "cuda")
    out = attnjit.paged_attention(
        q, k_cache, v_cache, table, _cu(lengths_q, "cuda"),
        torch.tensor(lengths_k, dtype=torch.int32, device="cuda"),
        max(lengths_q), max(lengths_k), causal=True)
    want, _ = varlen_attention_reference(q, k, v, _cu(lengths_q, "cuda"),
                                         _cu(lengths_k, "cuda"), causal=True)
    assert out.shape == (q.shape[0], q.shape[1], DV)
    assert relative_error(out, want) <= BOUND[torch.bfloat16]

"""attnjit: JIT-specialized attention kernels for PyTorch.

    import attnjit
    out = attnjit.varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k,
                                   max_seqlen_q, max_seqlen_k, causal=True,
                                   window_size=(127, 0), sinks=sinks,
                                   sinks_mode="null_logit")

The first call of each flag combination compiles its kernel with NVRTC (a
few hundred milliseconds) or loads it from the kernel cache
($ATTNJIT_CACHE_DIR, default $XDG_CACHE_HOME/attnjit or ~/.cache/attnjit;
$ATTNJIT_AOT_DIRS for an offline build; $ATTNJIT_NO_JIT=1 forbids
compiling); later calls launch at once. The call is also the custom op ``torch.ops.attnjit.varlen_attention``,
used under torch.compile.

Over an engine's paged K/V cache ([num_pages, page_size, Hkv, D] with a
block table; the custom op ``torch.ops.attnjit.paged_attention``):

    out = attnjit.paged_attention(q, k_cache, v_cache, block_table,
                                  cu_seqlens_q, seqused_k, max_seqlen_q,
                                  max_seqlen_k, causal=True)

A variant written in a spec (a mask and/or score expression with args of
its own, docs/expressions.md), compiled and cached like the built-in ones:

    doc_mask = attnjit.load_spec("specs/examples/document.yaml")
    out = doc_mask(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                   max_seqlen_k, doc=doc_ids)

A build step fills a kernel cache for explicit targets, with no GPU:

    attnjit.build_cache(["sm_80", "sm_90a"], cache_dir="kernels")
    attnjit.compile({"causal": True, "head_dim": 256}, target="sm_90a")
"""

from . import _C
from ._checks import HEAD_DIMS, SINK_MODES
from ._varlen import (check_mm_prefix_ranges, mm_prefix_spans,
                      varlen_attention)
from ._paged import paged_attention
from ._user import UserAttention, load_spec
from ._build import build_cache, compile

Error = _C.Error
__version__ = _C.version()


def cache_stats():
    """Counters of the process-wide kernel cache: memory_hits, disk_hits,
    aot_hits, compiles, corrupt_entries, write_failures, disk_disabled, and
    generic_launches (launches a generic variant answered, docs/tiers.md)."""
    return _C.cache_stats()


def wait_specialized():
    """Blocks until every kernel this process has launched runs its own
    specialized variant, not a tier answering while it compiles (the
    generic variant, or the expression VM for a user spec: docs/tiers.md);
    re-raises a failed compile. For timing steady-state calls."""
    from . import _varlen
    for kernel in list(_varlen._kernels.values()):
        kernel.wait_specialized()


__all__ = ["varlen_attention", "paged_attention", "load_spec", "compile",
           "build_cache",
           "UserAttention", "cache_stats", "wait_specialized",
           "check_mm_prefix_ranges", "mm_prefix_spans", "Error", "HEAD_DIMS",
           "SINK_MODES", "__version__"]

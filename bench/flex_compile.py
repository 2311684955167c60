"""FlexAttention compiled for the benchmarks, shared by every script that
times it as a peer."""

import torch


def compiled_flex():
    """FlexAttention under torch.compile, with room for one graph per
    problem shape. Dynamo recompiles flex_attention for each new shape and,
    past its recompile limit (8 by default), runs it eagerly: the unfused
    implementation that materializes the whole score matrix, tens of times
    slower (a benchmark timing a dozen shapes in one process would time
    that instead of FlexAttention)."""
    from torch.nn.attention.flex_attention import flex_attention
    cfg = torch._dynamo.config
    name = "recompile_limit" if hasattr(cfg, "recompile_limit") else "cache_size_limit"
    setattr(cfg, name, max(getattr(cfg, name), 1024))
    return torch.compile(flex_attention, dynamic=False)

"""The benchmark problems of the peer table (docs/device.md), for the Python tools
(bench_attention.py, tuning_table.py); bench/problems.h is the C++ copy the
kernel benchmark and the autotuner use."""

PROBLEMS = [
    # name, batch, seqlen, hq, hkv, d, causal, window (left, right), sinks, spans
    ("full_d80", 4, 4096, 16, 16, 80, False, (-1, -1), "none", False),
    ("causal_gqa_d128", 8, 2048, 32, 8, 128, True, (-1, -1), "none", False),
    ("causal_long_d128", 1, 16384, 32, 32, 128, True, (-1, -1), "none", False),
    ("causal_d256", 2, 8192, 16, 16, 256, True, (-1, -1), "none", False),
    ("mimo_window64_key0", 4, 4096, 16, 16, 80, False, (64, 64), "bias_key0", False),
    ("gpt_oss_window127_null", 4, 4096, 64, 8, 64, True, (127, 0), "null_logit", False),
    ("gemma4_window1023_spans", 2, 8192, 16, 8, 256, True, (1023, 0), "none", True),
]


def flags_of(problem):
    """The attention flags a problem runs with (as in bench/problems.h)."""
    name, batch, seqlen, hq, hkv, d, causal, window, sinks, spans = problem
    flags = {"head_dim": d}
    if causal:
        flags["causal"] = True
    if window != (-1, -1):
        flags["window"] = True
    if sinks != "none":
        flags["sinks"] = sinks
    if spans:
        flags["mm_prefix"] = True
        flags["mm_clamp"] = True
    return flags

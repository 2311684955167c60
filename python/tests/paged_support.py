"""What the paged_attention tests share: attnjit imported (with a stand-in
for an unbuilt extension, so that the argument checks still run), the
reference, the GPU marker and the error bounds.
"""

import itertools
import pathlib
import re
import sys
import types

import pytest

torch = pytest.importorskip("torch")

__all__ = ["attnjit", "HAS_EXTENSION", "_paged", "_varlen", "reference", "relative_error",
           "lse_error", "varlen_attention_reference", "gather_paged", "HAS_GPU", "gpu",
           "BOUND", "LSE_BOUND", "NAN", "_cu", "into_pages", "listed_launch_args"]

ROOT = pathlib.Path(__file__).resolve().parents[2]


def listed_launch_args():
    """{group macro: [argument names]} of the launch arguments' one list,
    runtime/include/attnjit/attention_args_list.h, both in its order."""
    text = (ROOT / "runtime" / "include" / "attnjit" / "attention_args_list.h").read_text()
    groups = {}
    for match in re.finditer(r"^#define (ATTNJIT_ATTENTION_ARGS_\w+)\(X\)((?:.*\\\n)*.*)$",
                             text, re.M):
        groups[match.group(1)] = re.findall(r"\bX\([^,()]+,\s*(\w+),", match.group(2))
    return groups


def _positional_launch_args():
    """_C.LAUNCH_ARGS as the binding makes it: every group of the list but
    the split-KV one (whose arguments follow `stream` as keywords)."""
    return tuple(name for group, names in listed_launch_args().items()
                 if group != "ATTNJIT_ATTENTION_ARGS_V3_SPLIT_KV" for name in names)


def _import_attnjit():
    """(attnjit, whether its extension is the real one).

    The argument checks run before any kernel is looked up, so they need no
    extension. Where attnjit cannot be imported because attnjit._C is not
    built, the package's sources beside this folder are imported with a
    stand-in _C whose kernel lookup raises, and taken out of sys.modules
    again afterwards, so that no other test module sees the stand-in.
    """
    try:
        import attnjit
        import attnjit.reference  # noqa: F401
        return attnjit, True
    except ImportError:
        pass
    sources = ROOT / "python"
    if not (sources / "attnjit" / "_paged.py").is_file():
        pytest.skip("attnjit is not importable and its sources are not here",
                    allow_module_level=True)
    stand_in = types.ModuleType("attnjit._C")

    class Error(RuntimeError):
        pass

    def get_kernel(flags, target=None):
        raise Error("attnjit._C is not built (a test stand-in)")

    def flag_values(name):
        # The spec's declared values of a flag, read from its YAML (the
        # extension answers from the embedded spec).
        text = (sources.parent / "specs" / "attention.yaml").read_text()
        found = re.search(r"^\s+" + name + r":\s*\{[^}]*?values:\s*\[([^\]]*)\]", text, re.M)
        items = [x.strip() for x in found.group(1).split(",")]
        return [int(x) if x.lstrip("-").isdigit() else x for x in items]

    stand_in.Error = Error
    stand_in.flag_values = flag_values
    stand_in.version = lambda: "stand-in"
    stand_in.cache_stats = dict
    stand_in.get_kernel = get_kernel
    stand_in.LAUNCH_ARGS = _positional_launch_args()
    saved_path, saved_modules = list(sys.path), set(sys.modules)
    sys.path.insert(0, str(sources))
    sys.modules["attnjit._C"] = stand_in
    try:
        import attnjit
        import attnjit.reference  # noqa: F401
    finally:
        sys.path[:] = saved_path
        for name in list(sys.modules):
            if ((name == "attnjit" or name.startswith("attnjit."))
                    and name not in saved_modules):
                del sys.modules[name]
    return attnjit, False


attnjit, HAS_EXTENSION = _import_attnjit()
_paged, _varlen = attnjit._paged, attnjit._varlen
reference = attnjit.reference
relative_error = reference.relative_error
lse_error = reference.lse_error
varlen_attention_reference = reference.varlen_attention_reference
gather_paged = reference.gather_paged

HAS_GPU = torch.cuda.is_available() and HAS_EXTENSION
gpu = pytest.mark.skipif(
    not HAS_GPU, reason="no GPU here (or attnjit._C not built); GPU tests "
                        "run on the device machine")

BOUND = {torch.bfloat16: 1e-2, torch.float16: 3e-3}
LSE_BOUND = 2e-2
NAN = float("nan")


def _cu(lens, device="cpu"):
    return torch.tensor([0, *itertools.accumulate(lens)], dtype=torch.int32,
                        device=device)


def into_pages(k, v, lengths_k, page_size, device):
    """k [total_k, Hkv, D] and v [total_k, Hkv, Dv] into pages handed out in
    reverse order: (k_cache, v_cache, block_table); rows no sequence owns
    hold NaN."""
    pages = [-(-n // page_size) for n in lengths_k]
    total = sum(pages)
    k_cache = torch.full((total, page_size) + tuple(k.shape[1:]), NAN, dtype=k.dtype,
                         device=device)
    v_cache = torch.full((total, page_size) + tuple(v.shape[1:]), NAN, dtype=v.dtype,
                         device=device)
    table = torch.zeros(len(lengths_k), max(pages), dtype=torch.int32)
    free, start = list(range(total))[::-1], 0
    for b, n in enumerate(lengths_k):
        for t in range(pages[b]):
            table[b, t] = page = free.pop()
            rows = slice(start + t * page_size, start + min(n, (t + 1) * page_size))
            k_cache[page, :rows.stop - rows.start] = k[rows]
            v_cache[page, :rows.stop - rows.start] = v[rows]
        start += n
    return k_cache, v_cache, table.to(device)

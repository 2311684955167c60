"""attnjit.compile and attnjit.build_cache: variants compiled for explicit
targets into a kernel cache, with no GPU needed, for a build step written
in Python (the command line's form is `attnjit build-cache`)."""

import os

from . import _C
from ._user import UserAttention, load_spec


def _spec_of(spec):
    if spec is None:
        return None
    if not isinstance(spec, UserAttention):
        spec = load_spec(spec)
    return spec._spec


def _targets(target, op):
    targets = [target] if isinstance(target, str) else list(target or ())
    if not targets or not all(isinstance(t, str) for t in targets):
        raise ValueError(f"{op}: target must be a target name such as 'sm_90a' "
                         f"or a list of them, got {target!r}")
    return targets


def _run(spec, variants, target, cache_dir, jobs, op):
    if cache_dir is not None:
        cache_dir = os.fspath(cache_dir)
    return _C.compile_variants(_spec_of(spec), variants, _targets(target, op),
                               cache_dir, int(jobs or 0))


def compile(flags=None, *, target, spec=None, preset=None, cache_dir=None):
    """Compiles one variant for `target` ('sm_90a', 'sm_80', or a list)
    into the kernel cache and returns one dict per target: variant, flags
    (canonical), target, source ('compiled', 'disk', ...), key, seconds,
    spills (bytes) and error ('' on success; a failure raises).

    flags: a dict in the attention spec's names ({"causal": True,
    "head_dim": 128, ...}; unnamed flags take their defaults), or preset:
    a preset's name. spec: a user spec (a path, YAML text or what
    load_spec returned); None is the built-in attention spec. cache_dir:
    the cache to fill; None is $ATTNJIT_CACHE_DIR, else ~/.cache/attnjit."""
    op = "attnjit.compile"
    if (flags is None) == (preset is None):
        raise ValueError(f"{op}: give exactly one of flags and preset")
    if preset is not None:
        variants = f"preset:{preset}"
    elif isinstance(flags, dict):
        variants = [flags]
    else:
        raise TypeError(f"{op}: flags must be a dict, got {type(flags).__name__}")
    results = _run(spec, variants, target, cache_dir, 1, op)
    failed = [r for r in results if r["error"]]
    if failed:
        raise RuntimeError(f"{op}: {failed[0]['variant']} for {failed[0]['target']}: "
                           f"{failed[0]['error']}")
    return results


def build_cache(target, *, cache_dir=None, spec=None, presets_only=False,
                jobs=None):
    """Compiles every variant of a spec's matrix and presets (only its
    presets with presets_only=True) for `target` (a name or a list) into
    the kernel cache, `jobs` at a time (default: every core). Returns one
    dict per variant and target as compile() does; a variant that failed
    to compile has its error there and the others are still built."""
    op = "attnjit.build_cache"
    if jobs is not None and int(jobs) < 1:
        raise ValueError(f"{op}: jobs must be at least 1, got {jobs}")
    return _run(spec, "presets" if presets_only else "matrix", target,
                cache_dir, jobs, op)

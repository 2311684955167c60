"""attnjit.compile and attnjit.build_cache: variants for explicit targets
into a cache directory, with no GPU needed (the extension must be built)."""

import pathlib

import pytest

from paged_support import HAS_EXTENSION, attnjit

pytestmark = pytest.mark.skipif(not HAS_EXTENSION,
                                reason="attnjit._C is not built here")
EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "specs" / "examples"


def test_compile_fills_the_cache_and_hits_it_again(tmp_path):
    first = attnjit.compile({"causal": True, "head_dim": 64}, target=["sm_80", "sm_90a"],
                            cache_dir=tmp_path)
    assert [r["target"] for r in first] == ["sm_80", "sm_90a"]
    assert all(r["source"] == "compiled" and len(r["key"]) == 64 for r in first)
    assert "causal=true" in first[0]["flags"] and "head_dim=64" in first[0]["flags"]
    again = attnjit.compile({"causal": True, "head_dim": 64}, target="sm_90a",
                            cache_dir=str(tmp_path))
    assert again[0]["source"] == "disk" and again[0]["key"] == first[1]["key"]


def test_a_preset_and_a_user_spec(tmp_path):
    preset = attnjit.compile(preset="gpt_oss_sliding", target="sm_90a", cache_dir=tmp_path)
    assert "sinks=null_logit" in preset[0]["flags"]
    user = attnjit.compile({"head_dim": 128}, spec=EXAMPLES / "causal_expr.yaml",
                           target="sm_90a", cache_dir=tmp_path)
    assert user[0]["source"] == "compiled" and not user[0]["error"]


def test_build_cache_presets_only(tmp_path):
    built = attnjit.build_cache("sm_90a", cache_dir=tmp_path, presets_only=True, jobs=2)
    assert len(built) >= 6 and not any(r["error"] for r in built)
    assert {r["source"] for r in built} == {"compiled"}
    again = attnjit.build_cache("sm_90a", cache_dir=tmp_path, presets_only=True)
    assert {r["source"] for r in again} == {"disk"}


@pytest.mark.parametrize("call, error, message", [
    (lambda d: attnjit.compile({"causl": True}, target="sm_90a", cache_dir=d),
     ValueError, "did you mean 'causal'"),
    (lambda d: attnjit.compile({"causal": True}, target="sm_91", cache_dir=d),
     ValueError, "unsupported target 'sm_91'"),
    (lambda d: attnjit.compile(target="sm_90a", cache_dir=d),
     ValueError, "exactly one of flags and preset"),
    (lambda d: attnjit.compile(preset="nope", target="sm_90a", cache_dir=d),
     ValueError, "unknown preset 'nope'"),
    (lambda d: attnjit.build_cache([], cache_dir=d),
     ValueError, "target must be"),
    (lambda d: attnjit.build_cache("sm_90a", cache_dir=d, jobs=0),
     ValueError, "jobs must be at least 1"),
])
def test_bad_input_gets_a_clear_error(tmp_path, call, error, message):
    with pytest.raises(error, match=message):
        call(tmp_path)


def test_an_unwritable_cache_dir_is_an_error(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    with pytest.raises(Exception, match="not writable"):
        attnjit.compile({"causal": True}, target="sm_80", cache_dir=blocked / "cache")


def test_wide_heads_are_sm90a_only(tmp_path):
    assert {384, 512} <= set(attnjit.HEAD_DIMS)
    assert list(attnjit.HEAD_DIMS) == attnjit._C.flag_values("head_dim")
    built = attnjit.compile({"causal": True, "head_dim": 512}, target="sm_90a",
                            cache_dir=tmp_path)
    assert not built[0]["error"]
    with pytest.raises(ValueError, match="sm_90a.s warpgroup path only"):
        attnjit.compile({"head_dim": 512}, target="sm_80", cache_dir=tmp_path)


def test_schedule_flags_are_the_launchs_choice():
    # (Refused before any compile or device: no GPU needed.)
    for name in ("split_kv", "small_pages"):
        with pytest.raises(ValueError, match="a schedule the launch picks"):
            attnjit._C.get_kernel({name: True}, target="sm_90a")
    # A build step may still name them: the variant for a cache.
    assert attnjit._C.flag_values("sinks") == ["none", "null_logit", "bias_key0"]

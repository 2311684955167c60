// How much work tile classification leaves on the examples of
// specs/examples: over a whole sequence, the key tiles the kernels visit
// (those of the built-in range that classify does not call empty, wherever
// they are: tile_walk.cuh) and give the element mask (not full), against the exact counts from
// evaluating the mask on every pair (tiles with a visible pair; of those,
// tiles with a masked pair). Equal counts mean no analysis, however exact
// (a Presburger library, say), could skip more tiles or unmask more on that
// mask; docs/expressions.md "Why intervals" cites these figures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "attnjit/expr.h"
#include "attnjit/spec.h"

namespace attnjit {
namespace {

constexpr int kSeqLen = 2048, kBlockM = 128, kBlockN = 64;

struct Census {
  long long visited = 0, masked = 0;      // by the classes
  long long nonempty = 0, partial = 0;    // exact
};

// The example's mask with values for its args: scalars by name, sorted
// document ids for a key-token tensor, a prefix per sequence.
struct Example {
  Spec spec;
  ExprEnv env;
  bool causal_flag = false;  // the example runs with the built-in causal flag

  Example(const std::string& name, bool causal) : causal_flag(causal) {
    spec = load_spec_file(std::string(ATTNJIT_SOURCE_DIR) + "/specs/examples/" + name + ".yaml");
    env.b = 0;
    env.n_q = env.n_k = kSeqLen;
    env.cu_seqlens_q = env.cu_seqlens_k = {0, kSeqLen};
    env.num_heads_q = env.num_heads_kv = 1;
    const ExprContext& ctx = spec.mask->context;
    for (const ExprScalar& s : ctx.scalars) {
      const double value = s.name == "chunk"         ? 512
                           : s.name == "window"      ? 255
                           : s.name == "sink_tokens" ? 4
                           : s.name == "stride"      ? 7
                           : s.name == "radius"      ? 64
                           : s.name == "global_tokens" ? 128
                           : s.name == "band"        ? 200
                           : s.name == "dilation"    ? 3
                           : s.name == "num_heads_q" || s.name == "num_heads_kv" ? 1
                                                                                 : 0;
      env.scalars.push_back(value);
    }
    for (const ExprTensor& t : ctx.tensors) {
      ExprTensorData data;
      if (t.per == TensorDomain::kKeyToken) {  // documents of 300, 900, 100 and 748 tokens
        for (int j = 0; j < kSeqLen; ++j) {
          data.ints.push_back(j < 300 ? 0 : j < 1200 ? 1 : j < 1300 ? 2 : 3);
        }
      } else if (t.per == TensorDomain::kSequence) {
        data.ints = {700};  // a prefix of 700 tokens
      } else {
        data.ints.assign(8, 0);
        data.floats.assign(8, 0);
      }
      env.tensors.push_back(data);
    }
  }

  bool visible(int p, int j) {
    if (causal_flag && j > p) return false;
    env.p = p;
    env.j = j;
    return evaluate_mask(*spec.mask, env);
  }

  Census count() {
    Census c;
    const int key_tiles = (kSeqLen + kBlockN - 1) / kBlockN;
    for (int p0 = 0; p0 < kSeqLen; p0 += kBlockM) {
      const int p1 = std::min(p0 + kBlockM, kSeqLen) - 1;
      // The built-in range: every key tile, or up to the diagonal's.
      int first = 0, last = causal_flag ? p1 / kBlockN : key_tiles - 1;
      const auto tile_class = [&](int kt) {
        const int j0 = kt * kBlockN, j1 = std::min(j0 + kBlockN, kSeqLen) - 1;
        return classify_mask(*spec.mask, ExprTile{0, 0, p0, p1, j0, j1}, env);
      };
      for (int kt = first; kt <= last; ++kt) {
        if (tile_class(kt) == TileClass::kEmpty) continue;  // the walk skips it
        const int j0 = kt * kBlockN;
        const bool causal_edge = causal_flag && j0 + kBlockN - 1 > p0;  // not interior
        ++c.visited;
        if (causal_edge || tile_class(kt) != TileClass::kFull) ++c.masked;
      }
      for (int kt = 0; kt < key_tiles; ++kt) {
        bool any = false, all = true;
        for (int p = p0; p <= p1; ++p) {
          for (int j = kt * kBlockN; j < std::min((kt + 1) * kBlockN, kSeqLen); ++j) {
            if (visible(p, j)) {
              any = true;
            } else {
              all = false;
            }
          }
        }
        if (any) ++c.nonempty;
        if (any && !all) ++c.partial;
      }
    }
    return c;
  }
};

struct Case {
  const char* name;
  bool causal_flag;
};

// gtest's "GetParam() = ..." shows the example, not the struct's bytes.
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name << (c.causal_flag ? " (causal flag)" : "");
}

class ExprCensus : public ::testing::TestWithParam<Case> {};

TEST_P(ExprCensus, ClassesAreExactOnTheExample) {
  Example example(GetParam().name, GetParam().causal_flag);
  ASSERT_TRUE(example.spec.mask.has_value());
  const Census c = example.count();
  std::printf("%-20s visited %4lld (exact %4lld), element-masked %4lld (exact %4lld) of %d\n",
              GetParam().name, c.visited, c.nonempty, c.masked, c.partial,
              (kSeqLen / kBlockM) * (kSeqLen / kBlockN));
  EXPECT_EQ(c.visited, c.nonempty) << "tiles visited with nothing visible";
  EXPECT_EQ(c.masked, c.partial) << "full tiles given the element mask";
  EXPECT_GT(c.nonempty, 0);
}

INSTANTIATE_TEST_SUITE_P(Examples, ExprCensus,
                         ::testing::Values(Case{"chunked_local", true}, Case{"prefix_lm", false},
                                           Case{"document", false}, Case{"causal_expr", false},
                                           Case{"sliding_window_expr", false},
                                           Case{"key0_bias_expr", false},
                                           Case{"streaming_llm", false}, Case{"strided", false},
                                           Case{"global_band", false},
                                           Case{"dilated_window", false}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace attnjit

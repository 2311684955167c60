// Uses the installed attnjit from C++ (the static libraries): parse the
// embedded spec and compile the GPT-OSS preset for an explicit target into
// a cache directory. c_api_user.c, linked against the shared library, then
// finds the same variant through the C API in strict no-JIT mode (the key
// printed here is handed to it by run_consumer_test.cmake). No GPU is
// needed.
#include <attnjit/attention.h>
#include <attnjit/attnjit.h>
#include <attnjit/cache.h>
#include <attnjit/error.h>
#include <attnjit/signature.h>
#include <attnjit/spec.h>

#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CACHE_DIR\n", argv[0]);
    return 2;
  }
  if (std::strcmp(attnjit_version(), ATTNJIT_EXPECTED_VERSION) != 0) {
    std::fprintf(stderr, "attnjit_version() is %s, the package says %s\n", attnjit_version(),
                 ATTNJIT_EXPECTED_VERSION);
    return 1;
  }
  std::string key;
  try {
    const attnjit::Spec spec = attnjit::load_embedded_spec("attention");
    const attnjit::FlagSet flags = attnjit::resolve_preset(spec, "gpt_oss_sliding");
    const attnjit::Target target = attnjit::parse_target("sm_80");
    const attnjit::Signature signature =
        attnjit::make_signature(spec, flags, attnjit::CompileOptions::from_environment(target));
    attnjit::CacheConfig config;
    config.user_dir = argv[1];
    attnjit::KernelCache cache(config);
    const attnjit::LookupResult found = cache.get(spec, signature);
    key = found.entry->key.hex;
    std::printf(
        "C++ API: %s\n  signature %s\n  key %s (%s, %zu bytes of "
        "cubin)\n",
        found.entry->display_name.c_str(), found.entry->canonical_signature.c_str(), key.c_str(),
        attnjit::to_string(found.source), found.entry->kernel.cubin.size());
    // The typed API gives the same variant.
    auto kernel = attnjit::AttentionKernel::get(attnjit::AttentionFlags::from_flag_set(flags),
                                                cache, &target);
    if (kernel->kernel().entry().key.hex != key) {
      std::fprintf(stderr, "AttentionKernel::get found another key\n");
      return 1;
    }
  } catch (const attnjit::Error& e) {
    std::fprintf(stderr, "attnjit error (%s): %s\n", attnjit::to_string(e.kind()), e.what());
    return 1;
  }
  return 0;
}

/* The C API from C, through the shared library (attnjit::attnjit): a
 * context in strict no-JIT mode over the cache the C++ consumer filled, the
 * same variant found on disk, a flag error reported. */
#include <attnjit/attnjit.h>

#include <stdio.h>
#include <string.h>

static int report(attnjit_status status, const char* what) {
  fprintf(stderr, "%s: %s: %s\n", what, attnjit_status_name(status), attnjit_last_error_message());
  return 1;
}

static int run_c_api(const char* cache_dir, const char* expected_key) {
  static const char* const no_aot_dirs[1] = {NULL};
  attnjit_context_options options;
  attnjit_context* context = NULL;
  attnjit_attention_flags flags;
  attnjit_kernel* kernel = NULL;
  attnjit_cache_stats stats;
  attnjit_status status;
  int failed = 0;

  attnjit_context_options_init(&options);
  options.cache_dir = cache_dir;
  options.aot_dirs = no_aot_dirs;
  options.num_aot_dirs = 0;
  options.no_jit = 1;
  status = attnjit_context_create(&options, &context);
  if (status != ATTNJIT_OK) return report(status, "attnjit_context_create");

  attnjit_attention_flags_init(&flags);
  flags.head_dim = 64;
  flags.causal = 1;
  flags.window = 1;
  flags.sinks = ATTNJIT_SINKS_NULL_LOGIT;
  status = attnjit_get_attention_kernel(context, &flags, "sm_80", &kernel);
  if (status != ATTNJIT_OK) {
    attnjit_context_destroy(context);
    return report(status, "attnjit_get_attention_kernel");
  }
  printf("C API: %s\n  key %s (%s)\n", attnjit_kernel_name(kernel), attnjit_kernel_key(kernel),
         attnjit_kernel_source(kernel));
  if (strcmp(attnjit_kernel_key(kernel), expected_key) != 0) {
    fprintf(stderr, "the C API found another key than the C++ API\n");
    failed = 1;
  }

  attnjit_cache_stats_init(&stats);
  status = attnjit_cache_stats_get(context, &stats);
  if (status != ATTNJIT_OK) failed |= report(status, "attnjit_cache_stats_get");
  printf("  stats: %llu disk hits, %llu compiles\n", (unsigned long long)stats.disk_hits,
         (unsigned long long)stats.compiles);
  if (stats.disk_hits != 1 || stats.compiles != 0) {
    fprintf(stderr, "expected one disk hit and no compile\n");
    failed = 1;
  }

  flags.head_dim = 72;
  status = attnjit_get_attention_kernel(context, &flags, "sm_80", &kernel);
  printf("  head_dim 72: %s: %s\n", attnjit_status_name(status), attnjit_last_error_message());
  if (status != ATTNJIT_ERROR_FLAGS) failed = 1;

  attnjit_context_destroy(context);
  printf("%s\n", failed ? "consumer: FAILED" : "consumer: OK");
  return failed;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s CACHE_DIR EXPECTED_KEY\n", argv[0]);
    return 2;
  }
  if (strcmp(attnjit_version(), ATTNJIT_EXPECTED_VERSION) != 0) {
    fprintf(stderr, "attnjit_version() is %s, the package says %s\n", attnjit_version(),
            ATTNJIT_EXPECTED_VERSION);
    return 1;
  }
  return run_c_api(argv[1], argv[2]);
}

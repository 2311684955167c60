// attnjit: compile one variant, build a kernel cache offline, inspect a
// cache, or run and check the attention on the local GPU.
#include <cstdio>

#include "attnjit/error.h"
#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "attnjit: a JIT generator of specialized attention kernels.\n"
      "Specs are YAML (see specs/README.md); the embedded ones are used by "
      "default."};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show the help of every subcommand");
  using attnjit::cli::Runner;
  std::vector<std::pair<CLI::App*, Runner>> commands;
  auto add = [&](const char* name, const char* help, Runner (*make)(CLI::App&)) {
    CLI::App* sub = app.add_subcommand(name, help);
    commands.emplace_back(sub, make(*sub));
  };
  add("compile",
      "Compile one variant: print its signature and resources, "
      "emit its source or PTX",
      attnjit::cli::add_compile);
  add("build-cache",
      "Compile every variant of the specs' matrix and presets "
      "into a cache directory (the offline job); with a GPU, also run and "
      "check the presets",
      attnjit::cli::add_build_cache);
  add("inspect", "List and verify the entries of a cache directory", attnjit::cli::add_inspect);
  add("specs", "List the embedded specs with their flags and presets", attnjit::cli::add_specs);
  add("check",
      "Run variants on the local GPU and compare them with the CPU "
      "reference (needs a GPU: without one it exits with an error)",
      attnjit::cli::add_check);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : commands) {
      if (sub->parsed()) return run();
    }
  } catch (const attnjit::Error& e) {
    std::fprintf(stderr, "attnjit: error: %s\n", e.what());
    return 1;
  }
  return 1;
}

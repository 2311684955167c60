// attnjit: compile one variant, build a kernel cache offline, inspect a
// cache, or run and check the attention on the local GPU.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "attnjit/error.h"
#include "commands.h"
#include "names.h"

#ifndef ATTNJIT_VERSION
#define ATTNJIT_VERSION "unknown"
#endif

namespace {

// Exit status of a command line that cannot be parsed.
constexpr int kUsageError = 2;

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  return names;
}

// "--name", "-n" for each option of `app` (positionals have neither).
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& n : option->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : option->get_snames()) names.push_back("-" + n);
  }
  return names;
}

int usage_error(const std::string& where, const std::string& message) {
  std::fprintf(stderr, "attnjit: error: %s\nrun '%s --help' for the usage\n", message.c_str(),
               where.c_str());
  return kUsageError;
}

// The first argument must be a subcommand or one of attnjit's own options.
int check_first_argument(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) {
    return usage_error("attnjit", "no subcommand given (subcommands: " +
                                      attnjit::detail::join(subcommand_names(app), ", ") + ")");
  }
  if (argv[1][0] == '-') {
    const std::string given(argv[1]);
    const std::string name = given.substr(0, given.find('='));
    const std::vector<std::string> options = option_names(app);
    for (const std::string& o : options) {
      if (o == name) return 0;
    }
    return usage_error("attnjit", "unknown option " + attnjit::detail::quoted(name) +
                                      " for 'attnjit'" +
                                      attnjit::detail::did_you_mean(name, options));
  }
  const std::vector<std::string> names = subcommand_names(app);
  for (const std::string& n : names) {
    if (n == argv[1]) return 0;
  }
  return usage_error("attnjit", "unknown subcommand " + attnjit::detail::quoted(argv[1]) +
                                    attnjit::detail::did_you_mean(argv[1], names) +
                                    " (subcommands: " + attnjit::detail::join(names, ", ") + ")");
}

// CLI11 found arguments nobody takes: name the first one, with the closest
// option of the subcommand it was given to.
int report_extras(const CLI::App& app) {
  const CLI::App* where = &app;
  for (const CLI::App* sub : app.get_subcommands()) where = sub;  // the one that was parsed
  std::vector<std::string> extras = where->remaining();
  if (extras.empty()) extras = app.remaining(true);
  const std::string command =
      where == &app ? std::string("attnjit") : "attnjit " + where->get_name();
  for (const std::string& extra : extras) {
    if (extra.size() < 2 || extra[0] != '-') continue;
    const std::string name = extra.substr(0, extra.find('='));
    return usage_error(command, "unknown option " + attnjit::detail::quoted(name) + " for '" +
                                    command + "'" +
                                    attnjit::detail::did_you_mean(name, option_names(*where)));
  }
  const std::string first = extras.empty() ? std::string() : extras.front();
  return usage_error(
      command, "unexpected argument " + attnjit::detail::quoted(first) + " for '" + command + "'");
}

// Any other error of CLI11's parser (an option's value that does not
// convert or is not accepted, options that exclude each other, a missing
// value): its message, in attnjit's form, with the subcommand it was given to.
int report_parse_error(const CLI::App& app, const CLI::ParseError& e) {
  const CLI::App* where = &app;
  for (const CLI::App* sub : app.get_subcommands()) where = sub;
  const std::string command =
      where == &app ? std::string("attnjit") : "attnjit " + where->get_name();
  std::string message = e.what();
  if (message.empty()) message = e.get_name();
  // "--preset: 1 required TEXT missing": an option given without its value.
  const size_t colon = message.find(": ");
  if (e.get_name() == "ArgumentMismatch" && colon != std::string::npos &&
      message.find(" required ", colon) != std::string::npos &&
      message.size() > 8 && message.compare(message.size() - 8, 8, " missing") == 0) {
    message = message.substr(0, colon) + ": needs a value";
  }
  if (e.get_name() == "RequiredError" && where == &app) {
    message = "no subcommand given (subcommands: " +
              attnjit::detail::join(subcommand_names(app), ", ") + ")";
  }
  return usage_error(command, message);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "attnjit: a JIT generator of specialized attention kernels.\n"
      "Specs are YAML (see specs/README.md); the embedded ones are used by "
      "default."};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show the help of every subcommand");
  app.set_version_flag("-V,--version", std::string("attnjit ") + ATTNJIT_VERSION);
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
  add("specs",
      "List the embedded specs (or the --spec files, validating them) with their flags, "
      "presets and expressions",
      attnjit::cli::add_specs);
  add("check",
      "Run variants on the local GPU and compare them with the CPU "
      "reference (needs a GPU: without one it exits with an error)",
      attnjit::cli::add_check);
  if (const int rc = check_first_argument(app, argc, argv)) return rc;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError&) {
    return report_extras(app);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --help-all, --version: exit 0
  } catch (const CLI::ParseError& e) {
    return report_parse_error(app, e);
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

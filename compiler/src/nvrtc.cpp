// compile_source(): NVRTC with the embedded headers, the log kept, the
// source dumped where a person can find it.
#include "attnjit/nvrtc.h"

#include <nvrtc.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "attnjit/embedded.h"
#include "attnjit/error.h"
#include "names.h"

namespace attnjit {
namespace {

namespace fs = std::filesystem;

// One NVRTC program; destroyed however compile_source() leaves.
class Program {
 public:
  explicit Program(const GeneratedSource& source) {
    std::vector<const char*> contents;
    std::vector<const char*> names;
    for (const EmbeddedHeader& header : embedded_headers()) {
      contents.push_back(header.contents.c_str());
      names.push_back(header.path.c_str());
    }
    for (const GeneratedHeader& header : source.headers) {
      contents.push_back(header.contents.c_str());
      names.push_back(header.path.c_str());
    }
    const nvrtcResult result =
        nvrtcCreateProgram(&program_, source.text.c_str(), source.name.c_str(),
                           static_cast<int>(contents.size()), contents.data(), names.data());
    if (result != NVRTC_SUCCESS) {
      throw Error(ErrorKind::kCompile, "nvrtc could not create a program for " + source.name +
                                           ": " + nvrtcGetErrorString(result));
    }
  }
  ~Program() { nvrtcDestroyProgram(&program_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  nvrtcResult compile(const std::vector<std::string>& flags) {
    std::vector<const char*> arguments;
    for (const std::string& flag : flags) arguments.push_back(flag.c_str());
    return nvrtcCompileProgram(program_, static_cast<int>(arguments.size()), arguments.data());
  }
  std::string log() const { return read(nvrtcGetProgramLogSize, nvrtcGetProgramLog, true); }
  std::string ptx() const { return read(nvrtcGetPTXSize, nvrtcGetPTX, true); }
  std::string cubin() const { return read(nvrtcGetCUBINSize, nvrtcGetCUBIN, false); }

 private:
  using SizeGetter = nvrtcResult (*)(nvrtcProgram, size_t*);
  using DataGetter = nvrtcResult (*)(nvrtcProgram, char*);
  // Logs and PTX come with a terminating NUL, which is dropped.
  std::string read(SizeGetter get_size, DataGetter get_data, bool nul_terminated) const {
    size_t size = 0;
    if (get_size(program_, &size) != NVRTC_SUCCESS || size == 0) return "";
    std::string bytes(size, '\0');
    if (get_data(program_, bytes.data()) != NVRTC_SUCCESS) return "";
    if (nul_terminated && !bytes.empty() && bytes.back() == '\0') bytes.pop_back();
    return bytes;
  }
  nvrtcProgram program_ = nullptr;
};

// A name safe to use as a file name, whatever a caller put in source.name.
std::string file_stem(const GeneratedSource& source) {
  std::string stem = source.name;
  if (stem.size() > 3 && stem.compare(stem.size() - 3, 3, ".cu") == 0) stem.resize(stem.size() - 3);
  const bool safe =
      !stem.empty() && stem.front() != '.' && std::all_of(stem.begin(), stem.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
      });
  return safe ? stem : "attnjit_source";
}

std::optional<std::string> dump_dir_from_environment() {
  const char* dir = std::getenv("ATTNJIT_DUMP_DIR");
  if (dir == nullptr || *dir == '\0') return std::nullopt;
  return std::string(dir);
}

// ATTNJIT_DUMP_DIR, else a fresh directory under TMPDIR (or /tmp).
fs::path make_dump_dir() {
  if (auto dir = dump_dir_from_environment()) {
    fs::create_directories(*dir);
    return *dir;
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      (fs::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") / "attnjit-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    throw fs::filesystem_error("mkdtemp", pattern, std::error_code(errno, std::generic_category()));
  }
  return pattern;
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) {
    throw fs::filesystem_error("write", path, std::error_code(EIO, std::generic_category()));
  }
}

// The files written, "name.cu" first; on failure, the reason instead.
std::string dump(const GeneratedSource& source, const std::string& log, const std::string& ptx) {
  try {
    const fs::path dir = make_dump_dir();
    const std::string stem = file_stem(source);
    const fs::path source_path = dir / (stem + ".cu");
    write_file(source_path, source.text);
    write_file(dir / (stem + ".log"), log);
    if (!ptx.empty()) write_file(dir / (stem + ".ptx"), ptx);
    return source_path.string();
  } catch (const std::exception& error) {
    return std::string("(not dumped: ") + error.what() + ")";
  }
}

[[noreturn]] void throw_compile_error(const GeneratedSource& source, const CompileOptions& options,
                                      const std::vector<std::string>& flags, nvrtcResult result,
                                      const std::string& log) {
  throw Error(ErrorKind::kCompile, "nvrtc could not compile " + source.name + " (entry " +
                                       source.entry + ") for " + options.target.name() + ": " +
                                       nvrtcGetErrorString(result) +
                                       (source.tuning_from.empty()
                                            ? std::string()
                                            : "\ntiles: from " + source.tuning_from) +
                                       "\nsource: " + dump(source, log, "") +
                                       "\noptions: " + detail::join(flags, " ") + "\nlog:\n" + log);
}

}  // namespace

CompiledKernel compile_source(const GeneratedSource& source, const CompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::string> flags = options.nvrtc_flags();
  Program program(source);
  const nvrtcResult result = program.compile(flags);
  const std::string log = program.log();
  if (result != NVRTC_SUCCESS) throw_compile_error(source, options, flags, result, log);

  CompiledKernel kernel;
  kernel.entry = source.entry;
  kernel.cubin = program.cubin();
  kernel.log = log;
  std::string ptx = program.ptx();
  parse_ptxas_report(log, source.entry, kernel.resources);
  if (!parse_launch_info(ptx, source.entry, kernel.resources)) {
    throw Error(ErrorKind::kCompile, "the PTX of " + source.name + " holds no " + source.entry +
                                         "_launch_info; was it made by generate_source()?");
  }
  if (kernel.cubin.empty()) {
    throw Error(ErrorKind::kCompile, "nvrtc produced no cubin for " + source.name);
  }
  kernel.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (dump_dir_from_environment()) dump(source, log, ptx);
  if (options.emit_ptx) kernel.ptx = std::move(ptx);
  return kernel;
}

}  // namespace attnjit

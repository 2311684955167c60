// NVRTC: generated source -> CUBIN (+ PTX), with the log and the resource
// usage of the entry kernel. Works on a machine without a GPU or driver.
#pragma once

#include <string>
#include <vector>

#include "attnjit/codegen.h"
#include "attnjit/options.h"

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

// -1: unknown. The first five come from ptxas's verbose report in the NVRTC
// log (--ptxas-options=-v); the last three from the initializer of
// `<entry>_launch_info` in the PTX.
struct ResourceUsage {
  int registers = -1;     // per thread
  int static_smem = -1;   // bytes
  int spill_stores = -1;  // bytes
  int spill_loads = -1;   // bytes
  int stack_frame = -1;   // bytes
  int dynamic_smem = -1;  // bytes, from the launch info in the source
  int threads = -1;       // per block, from the launch info
  int min_blocks = -1;    // per SM (launch bounds), from the launch info
};

// The parsers compile_source() uses, exposed for tests and tools.
// Fills registers, static_smem, spills and stack_frame for `entry`; fields
// the log does not mention stay -1.
void parse_ptxas_report(const std::string& log, const std::string& entry, ResourceUsage& usage);
// Fills threads, dynamic_smem and min_blocks; false if the PTX holds no
// initialized `<entry>_launch_info`.
bool parse_launch_info(const std::string& ptx, const std::string& entry, ResourceUsage& usage);

struct CompiledKernel {
  std::string entry;
  std::string cubin;  // ELF bytes
  std::string ptx;    // empty unless options.emit_ptx
  std::string log;    // NVRTC's log, kept also on success
  ResourceUsage resources;
  double compile_seconds = 0;
};

// Compiles with every embedded header available by its path under
// templates/ (no include path, no toolkit header). Throws Error(kCompile)
// with the log, the options and the path where the source was written
// (ATTNJIT_DUMP_DIR, else a fresh attnjit-XXXXXX dir under TMPDIR or /tmp)
// on failure. With ATTNJIT_DUMP_DIR set, successful compiles are dumped
// there too (<name>.cu, <name>.ptx, <name>.log). PTX is always produced
// (NVRTC gives it beside the cubin for a real sm_ target) and kept when
// options.emit_ptx.
CompiledKernel compile_source(const GeneratedSource& source, const CompileOptions& options);

}  // namespace attnjit

#pragma GCC visibility pop

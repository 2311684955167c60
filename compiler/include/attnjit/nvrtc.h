// NVRTC: generated source -> CUBIN (+ PTX), with the log and the resource
// usage of the entry kernel. Works on a machine without a GPU or driver.
#pragma once

#include <string>
#include <vector>

#include "attnjit/codegen.h"
#include "attnjit/signature.h"

namespace attnjit {

struct ResourceUsage {
  int registers = -1;       // per thread
  int static_smem = -1;     // bytes
  int spill_stores = -1;    // bytes
  int spill_loads = -1;     // bytes
  int stack_frame = -1;     // bytes
  int dynamic_smem = -1;    // bytes, from the launch info in the source
  int threads = -1;         // per block, from the launch info
};

struct CompiledKernel {
  std::string entry;
  std::string cubin;        // ELF bytes
  std::string ptx;          // empty unless options.emit_ptx
  std::string log;          // NVRTC's log, kept also on success
  ResourceUsage resources;
  double compile_seconds = 0;
};

// "13.0"
std::string nvrtc_version();

// Throws Error(kCompile) with the log, the options and the path where the
// source was written (ATTNJIT_DUMP_DIR, else a temp dir) on failure.
// With ATTNJIT_DUMP_DIR set, successful compiles are dumped there too.
CompiledKernel compile_source(const GeneratedSource& source,
                              const CompileOptions& options);

}  // namespace attnjit

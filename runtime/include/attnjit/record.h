// Record mode: with ATTNJIT_RECORD=/path/manifest set, every process appends
// each variant it requests (the first time it requests it) to that file, one
// JSON object a line:
//   {"spec":"attention_prefill","flags":"dtype=bf16,head_dim=128,...","target":"sm_90a"}
// `attnjit build-cache --manifest FILE` builds exactly those variants, so an
// offline cache matches what a deployment asks for. Many processes and
// threads may share one manifest: each line goes out in one O_APPEND write
// (lines are far below PIPE_BUF), and a process writes a variant once.
#pragma once

#include <string>
#include <vector>

#include "attnjit/spec.h"
#include "attnjit/target.h"

// The public C++ API: exported from libattnjit.so (the build hides the rest).
#pragma GCC visibility push(default)

namespace attnjit {

struct RecordedVariant {
  std::string spec;    // the spec's family ("attention_prefill")
  std::string flags;   // FlagSet::str(): every flag, in the spec's order
  std::string target;  // "sm_90a"

  bool operator==(const RecordedVariant& o) const {
    return spec == o.spec && flags == o.flags && target == o.target;
  }
  bool operator<(const RecordedVariant& o) const;
};

// The manifest line of a variant, with its newline.
std::string manifest_line(const RecordedVariant& variant);

// Appends the variant to the manifest at `path` unless this process has
// already appended it there. A failed write warns once on stderr and never
// fails the caller (recording is an aid, not part of the request); returns
// whether the line is now in the file.
bool record_variant(const std::string& path, const RecordedVariant& variant);

// What AttentionKernel::get calls where a process first requests a variant:
// records it to $ATTNJIT_RECORD when that is set, else does nothing.
void record_requested_variant(const std::string& spec, const FlagSet& flags, const Target& target);

// Reads a manifest: one object a line with the string fields spec, flags and
// target; blank lines are skipped. Throws Error(kArgument)
// "<path>:<line>: <what is wrong>" for a line it cannot read, or when the
// file cannot be read. Duplicates are kept, in file order.
struct ManifestLine {
  RecordedVariant variant;
  int line = 0;
};
std::vector<ManifestLine> read_manifest(const std::string& path);

}  // namespace attnjit

#pragma GCC visibility pop

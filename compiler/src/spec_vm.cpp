// expression_vm_spec(): the attention spec extended with the expression
// VM's args, written as a spec extending it and read by parse_spec (so its
// params layout, flags and tuning are the attention spec's by the same
// rules as any user spec's).
#include <string>

#include <fmt/format.h>

#include "attention/user_vm.cuh"
#include "attnjit/spec.h"

namespace attnjit {

const Spec& expression_vm_spec() {
  static const Spec spec = [] {
    std::string yaml =
        "family: attention_vm\n"
        "description: any spec's mask and score expressions, run by the expression VM\n"
        "extends: attention\n"
        "args:\n";
    const auto arg = [&](const std::string& name, const char* type, const std::string& doc) {
      yaml += fmt::format("  - {{name: {}, type: \"{}\", doc: \"{}\"}}\n", name, type, doc);
    };
    for (const char* program : {"mask", "score"}) {
      arg(fmt::format("vm_{}_code", program), "const int32*",
          fmt::format("the {} program, two words per instruction", program));
      arg(fmt::format("vm_{}_count", program), "int32",
          fmt::format("its instructions (0: no {})", program));
      arg(fmt::format("vm_{}_result", program), "int32", "the register of its value");
    }
    for (int i = 0; i < vm::kIntSlots; ++i) arg(fmt::format("vm_i{}", i), "int32", "int slot");
    for (int i = 0; i < vm::kFloatSlots; ++i) arg(fmt::format("vm_f{}", i), "float", "float slot");
    for (int i = 0; i < vm::kTensorSlots; ++i) {
      arg(fmt::format("vm_t{}", i), "const int32*", "tensor slot (int32 or float elements)");
    }
    Spec s = parse_spec(yaml, "attention_vm (built in)");
    s.expression_vm = true;
    return s;
  }();
  return spec;
}

}  // namespace attnjit

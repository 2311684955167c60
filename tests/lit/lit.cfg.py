import os
import lit.formats

config.name = "attnjit"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".test"]
config.test_source_root = config.source_root
config.test_exec_root = config.build_root
# Each run compiles through NVRTC; keep the cache private to the lit run.
config.environment["ATTNJIT_CACHE_DIR"] = os.path.join(config.build_root, "cache")
config.substitutions.append(("%attnjit", config.attnjit_bin))
config.substitutions.append(("FileCheck", config.filecheck))
# LLVM's `not` (inverts an exit status) lives beside FileCheck.
config.substitutions.append(("not ", os.path.join(os.path.dirname(config.filecheck), "not") + " "))

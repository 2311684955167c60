import os
import lit.formats

config.name = "attnjit-cli"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".test"]
config.excludes = ["Inputs"]
config.test_source_root = config.source_root
config.test_exec_root = config.build_root
# A private cache, and no driver: the results must not depend on whether
# the machine has a GPU (ATTNJIT_LIBCUDA names a library that is not there).
config.environment["ATTNJIT_CACHE_DIR"] = os.path.join(config.build_root, "cache")
config.environment["ATTNJIT_LIBCUDA"] = os.path.join(config.build_root, "no-libcuda.so")
for name in ("ATTNJIT_AOT_DIRS", "ATTNJIT_NO_JIT", "ATTNJIT_LOG", "ATTNJIT_DUMP_DIR", "ATTNJIT_RECORD"):
    config.environment.pop(name, None)
config.substitutions.append(("%attnjit", config.attnjit_bin))
config.substitutions.append(("%version", config.attnjit_version))
config.substitutions.append(("FileCheck", config.filecheck))
# LLVM's `not` (inverts an exit status; a crash is still a failure) lives
# beside FileCheck.
config.substitutions.append(("not ", os.path.join(os.path.dirname(config.filecheck), "not") + " "))

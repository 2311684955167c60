#!/usr/bin/env python3
"""The layering check itself: it must see what it is there to catch."""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_layering  # noqa: E402


class Tree:
    """A throwaway compiler/ and runtime/ tree of a few files."""

    def __init__(self, files):
        self.root = tempfile.mkdtemp(prefix="attnjit-layering-")
        for library in check_layering.LIBRARIES:
            for folder in ("include/attnjit", "src"):
                os.makedirs(os.path.join(self.root, library, folder))
        for path, text in files.items():
            with open(os.path.join(self.root, path), "w", encoding="utf-8") as out:
                out.write(text)

    def __enter__(self):
        return self.root

    def __exit__(self, *exc):
        shutil.rmtree(self.root)


def unit(name, includes=(), library="compiler"):
    """A header and a source for `name`, the source including `includes`."""
    lines = ['#include "attnjit/%s.h"\n' % name] + ['#include "%s"\n' % i for i in includes]
    return {
        "%s/include/attnjit/%s.h" % (library, name): "#pragma once\n",
        "%s/src/%s.cpp" % (library, name): "".join(lines),
    }


class CheckLayeringTest(unittest.TestCase):
    def problems(self, *units):
        files = {}
        for u in units:
            files.update(u)
        with Tree(files) as root:
            return check_layering.check(root)

    def test_pipeline_order_passes(self):
        self.assertEqual(
            self.problems(unit("error"), unit("signature", ["attnjit/error.h"]),
                          unit("nvrtc", ["attnjit/signature.h"]),
                          unit("cache", ["attnjit/nvrtc.h"], library="runtime")), [])

    def test_a_call_back_into_a_later_unit_is_a_cycle_and_against_the_order(self):
        problems = self.problems(unit("signature", ["attnjit/nvrtc.h"]),
                                 unit("nvrtc", ["attnjit/signature.h"]))
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("include cycle among compiler:nvrtc, compiler:signature: compiler:nvrtc "
                      "(compiler/src/nvrtc.cpp:2) -> compiler:signature "
                      "(compiler/src/signature.cpp:2) -> compiler:nvrtc", problems)
        self.assertIn("compiler/src/signature.cpp:2: compiler:signature includes "
                      "compiler:nvrtc, which comes after it in the pipeline", problems)

    def test_a_runtime_cycle_through_a_private_header(self):
        files = unit("kernel", ["cache_disk.h"], library="runtime")
        files["runtime/src/cache_disk.h"] = '#include "attnjit/kernel.h"\n'
        problems = self.problems(files)
        self.assertEqual(len(problems), 2, problems)
        self.assertTrue(problems[0].startswith("include cycle among runtime:cache_disk, "
                                               "runtime:kernel:"), problems)
        self.assertEqual(problems[1], "runtime/src/cache_disk.h:1: runtime:cache_disk includes "
                                      "runtime:kernel, which comes after it in the layers")

    def test_a_runtime_part_that_includes_the_kernel_object_runs_back_up(self):
        files = unit("attention", ["kv_tensor_maps.h"], library="runtime")
        files["runtime/src/kv_tensor_maps.h"] = '#include "attnjit/attention_args.h"\n'
        files.update(unit("attention_args", library="runtime"))
        self.assertEqual(self.problems(files), [])
        files["runtime/src/kv_tensor_maps.h"] = '#include "attnjit/attention.h"\n'
        problems = self.problems(files)
        self.assertIn("runtime/src/kv_tensor_maps.h:1: runtime:kv_tensor_maps includes "
                      "runtime:attention, which comes after it in the layers", problems)

    def test_a_runtime_unit_outside_the_order_must_be_placed(self):
        self.assertEqual(self.problems(unit("autotuner", library="runtime")),
                         ["runtime:autotuner is not in RUNTIME_ORDER "
                          "(tests/layering/check_layering.py): place it in the layers"])

    def python_problems(self, files):
        with Tree({}) as root:
            for path, text in files.items():
                os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
                with open(os.path.join(root, path), "w", encoding="utf-8") as out:
                    out.write(text)
            return check_layering.check(root)

    def test_a_python_import_cycle_is_found_even_inside_a_function(self):
        problems = self.python_problems(
            {"bench/run.py": "import os\n\ndef main():\n    from check import go\n",
             "bench/check.py": "from run import main  # noqa\n",
             "bench/other.py": "import run\n"})
        self.assertEqual(problems, ["import cycle among bench:check, bench:run: bench:check "
                                    "(bench/check.py:1) -> bench:run (bench/run.py:4) -> "
                                    "bench:check"])

    def test_a_package_importing_its_modules_is_no_cycle(self):
        self.assertEqual(self.python_problems(
            {"python/attnjit/__init__.py": "from . import _a, _b\nfrom ._a import f\n",
             "python/attnjit/_a.py": "from . import _b\n",
             "python/attnjit/_b.py": "import os\n"}), [])

    def test_sources_of_one_unit_may_call_each_other(self):
        files = unit("spec", ["spec_sections.h"])
        files["compiler/src/spec_sections.h"] = '#include "attnjit/spec.h"\n'
        files["compiler/src/spec_sections.cpp"] = '#include "spec_sections.h"\n'
        self.assertEqual(self.problems(files), [])

    def test_a_unit_outside_the_order_must_be_placed(self):
        self.assertEqual(self.problems(unit("autotune")),
                         ["compiler:autotune is not in COMPILER_ORDER "
                          "(tests/layering/check_layering.py): place it in the pipeline"])

    def test_the_compiler_never_includes_the_runtime(self):
        problems = self.problems(unit("nvrtc", ["attnjit/cache.h"]),
                                 unit("cache", library="runtime"))
        self.assertEqual(problems, ["compiler/src/nvrtc.cpp:2: the compiler includes the "
                                    "runtime's runtime:cache"])

    def test_an_include_of_no_file_is_reported(self):
        self.assertEqual(self.problems(unit("codegen", ["attnjit/gone.h"])),
                         ['compiler/src/codegen.cpp:2: #include "attnjit/gone.h" is no file '
                          "of compiler/ or runtime/"])

    def test_includes_in_comments_and_strings_are_not_includes(self):
        files = unit("codegen")
        files["compiler/src/codegen.cpp"] += ('// #include "attnjit/nvrtc.h"\n'
                                              '  "#include \\"attnjit/gone.h\\"\\n"\n')
        self.assertEqual(self.problems(files), [])


if __name__ == "__main__":
    unittest.main()

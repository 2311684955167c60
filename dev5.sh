set -uo pipefail
export PATH=/opt/torch/.venv/bin:$PATH:/usr/local/cuda/bin
export ATTNJIT_CACHE_DIR=$PWD/build-gpu/kcache PYTHONPATH=$PWD/build-gpu/python
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNJIT_BUILD_PYTHON=ON >/tmp/cmake.log 2>&1 && cmake --build build-gpu -j16 >/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
so=$(ls build-gpu/python/attnjit/_C*.so)
cat > /tmp/c.py <<PY
import importlib.util, sys, os
import torch
if sys.argv[1] == "deep": sys.setdlopenflags(os.RTLD_NOW | os.RTLD_DEEPBIND)
s = importlib.util.spec_from_file_location("_C", "$so"); m = importlib.util.module_from_spec(s); s.loader.exec_module(m)
if sys.argv[1] == "maps":
    libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if ".so" in l})
    print("\n".join(libs))
    sys.exit(0)
try: m.load_spec("family: [x\n", "s")
except Exception as e: print("raised", type(e).__name__, e)
PY
echo "== deepbind"; timeout 30 python3 /tmp/c.py deep; echo "rc $?"
for l in $(python3 /tmp/c.py maps); do n=$(nm -D --defined-only "$l" 2>/dev/null | grep -cE " (__cxa_throw|_Unwind_RaiseException|__gxx_personality_v0|_ZTISt13runtime_error|_ZN4YAML)"); [ "$n" != 0 ] && echo "$l $n"; done
echo "== pytest"
timeout 170 python3 -m pytest -q -x -k "not bad_specs" python/tests/test_user.py > $OUT/pyuser.log 2>&1; echo "rc $?"
tail -4 $OUT/pyuser.log

# ctest script (cmake -P): install the build tree into a fresh prefix,
# configure and build tests/consumer against it with find_package(attnjit),
# and run its two programs: the C++ one (static libraries) fills a cache, the
# C one (the shared library) finds the same key there. Variables: BUILD_DIR, SOURCE_DIR (this folder), WORK_DIR,
# GENERATOR, and optionally MAKE_PROGRAM, CONFIG, CXX_COMPILER,
# CUDATOOLKIT_ROOT.
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_consumer_test.cmake needs -D${var}=...")
  endif()
endforeach()

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer test: ${what} failed (${rc})")
  endif()
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

set(config_args)
if(CONFIG)
  set(config_args --config ${CONFIG})
endif()
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix}
    ${config_args})

set(configure_args -S ${SOURCE_DIR} -B ${build} -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix})
if(MAKE_PROGRAM)
  list(APPEND configure_args -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
if(CONFIG)
  list(APPEND configure_args -DCMAKE_BUILD_TYPE=${CONFIG})
endif()
if(CXX_COMPILER)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()
if(CUDATOOLKIT_ROOT)
  list(APPEND configure_args -DCUDAToolkit_ROOT=${CUDATOOLKIT_ROOT})
endif()
run("configuring the consumer" ${CMAKE_COMMAND} ${configure_args})
run("building the consumer" ${CMAKE_COMMAND} --build ${build} ${config_args})

find_program(consumer attnjit_consumer PATHS ${build} ${build}/${CONFIG}
             NO_DEFAULT_PATH REQUIRED)
find_program(consumer_c attnjit_consumer_c PATHS ${build} ${build}/${CONFIG}
             NO_DEFAULT_PATH REQUIRED)
execute_process(COMMAND ${consumer} ${WORK_DIR}/cache
  RESULT_VARIABLE rc OUTPUT_VARIABLE cxx_output)
message("${cxx_output}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "consumer test: running the C++ consumer failed (${rc})")
endif()
if(NOT cxx_output MATCHES "key ([0-9a-f]+)")
  message(FATAL_ERROR "consumer test: the C++ consumer printed no key")
endif()
set(key ${CMAKE_MATCH_1})

# The same program linked against libattnjit.so alone finds the same key.
find_program(consumer_shared attnjit_consumer_shared PATHS ${build} ${build}/${CONFIG}
             NO_DEFAULT_PATH REQUIRED)
execute_process(COMMAND ${consumer_shared} ${WORK_DIR}/cache-shared
  RESULT_VARIABLE rc OUTPUT_VARIABLE shared_output ERROR_VARIABLE shared_error)
message("${shared_output}")
if(NOT rc EQUAL 0 OR NOT shared_output MATCHES "key ${key}")
  message(FATAL_ERROR "consumer test: the C++ consumer linked against libattnjit.so failed "
                      "(${rc}) or printed another key:\n${shared_output}${shared_error}")
endif()

# The C program loads libattnjit.so.<SOVERSION> (the SONAME).
find_program(READELF readelf)
if(READELF)
  execute_process(COMMAND ${READELF} -d ${consumer_c} OUTPUT_VARIABLE dynamic
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT dynamic MATCHES "NEEDED[^\n]*\\[libattnjit\\.so\\.[0-9]+\\]")
    message(FATAL_ERROR "consumer test: attnjit_consumer_c does not need libattnjit.so:\n${dynamic}")
  endif()
endif()
run("running the C consumer" ${consumer_c} ${WORK_DIR}/cache ${key})

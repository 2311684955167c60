# The README's test command (the line that runs ctest) must appear verbatim
# in .ci/run.
file(STRINGS ${README} lines REGEX "ctest --test-dir")
list(GET lines 0 command)
file(READ ${CI} ci)
string(FIND "${ci}" "${command}" at)
if(at EQUAL -1)
  message(FATAL_ERROR ".ci/run does not run the README's test command:\n${command}")
endif()
message(STATUS "ok: .ci/run runs `${command}`")

# attnjit_embed(<out.cpp> <function> <base_dir> <files...>)
# Generates a C++ file that defines
#   const std::vector<std::pair<const char*, std::string_view>>& <function>();
# returning (path relative to base_dir, bytes) for each file. The bytes are
# embedded verbatim as hex so that any content survives.
function(attnjit_embed out_cpp function base_dir)
  set(files ${ARGN})
  add_custom_command(
    OUTPUT ${out_cpp}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out_cpp} -DFUNCTION=${function}
            -DBASE=${base_dir} "-DFILES=${files}"
            -P ${PROJECT_SOURCE_DIR}/cmake/AttnjitEmbedScript.cmake
    DEPENDS ${files} ${PROJECT_SOURCE_DIR}/cmake/AttnjitEmbedScript.cmake
    COMMENT "Embedding ${function}"
    VERBATIM)
endfunction()

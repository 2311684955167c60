# Install and export (included by the root CMakeLists.txt when
# ATTNJIT_INSTALL is on). A consumer writes
#   find_package(attnjit 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE attnjit::runtime)
# and gets the same target names as a build inside this tree:
# attnjit::compiler, attnjit::runtime (static, the C++ API), attnjit::attnjit
# (libattnjit.so, the C API of attnjit.h) and the command attnjit::cli.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ATTNJIT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/attnjit
    CACHE STRING "Where attnjitConfig.cmake is installed, under the prefix")

install(TARGETS attnjit_compiler attnjit_runtime
  EXPORT attnjitTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT attnjit_development
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT attnjit_runtime
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT attnjit_runtime
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS attnjit_shared
  EXPORT attnjitTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT attnjit_runtime
          NAMELINK_COMPONENT attnjit_development
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/compiler/include/
                  ${PROJECT_SOURCE_DIR}/runtime/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT attnjit_development
  FILES_MATCHING PATTERN "*.h")
if(TARGET attnjit)
  set_target_properties(attnjit PROPERTIES EXPORT_NAME cli)
  install(TARGETS attnjit EXPORT attnjitTargets
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT attnjit_runtime)
endif()

install(EXPORT attnjitTargets
  NAMESPACE attnjit::
  DESTINATION ${ATTNJIT_INSTALL_CMAKEDIR}
  COMPONENT attnjit_development)
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/attnjitConfig.cmake.in
  ${PROJECT_BINARY_DIR}/attnjitConfig.cmake
  INSTALL_DESTINATION ${ATTNJIT_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/attnjitConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/attnjitConfig.cmake
              ${PROJECT_BINARY_DIR}/attnjitConfigVersion.cmake
  DESTINATION ${ATTNJIT_INSTALL_CMAKEDIR}
  COMPONENT attnjit_development)

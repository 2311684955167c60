# Third-party libraries, found the same way on Debian 12 and Ubuntu 24.04.
find_package(Threads REQUIRED)
find_package(CUDAToolkit REQUIRED)   # NVRTC only; libcuda is dlopen'ed
# CMake's CUDA::nvrtc drags in the driver stub (CUDA::cuda_driver). Nothing
# of attnjit may link libcuda (the driver is opened with dlopen, so everything
# but launching works without one), so the dependency is dropped here.
if(TARGET CUDA::nvrtc)
  get_target_property(_attnjit_nvrtc_deps CUDA::nvrtc INTERFACE_LINK_LIBRARIES)
  if(_attnjit_nvrtc_deps)
    list(REMOVE_ITEM _attnjit_nvrtc_deps CUDA::cuda_driver)
    set_target_properties(CUDA::nvrtc PROPERTIES INTERFACE_LINK_LIBRARIES "${_attnjit_nvrtc_deps}")
  endif()
endif()
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)

# yaml-cpp 0.7 exports `yaml-cpp`, 0.8 `yaml-cpp::yaml-cpp`.
find_package(yaml-cpp REQUIRED)
if(TARGET yaml-cpp::yaml-cpp)
  set(ATTNJIT_YAML_TARGET yaml-cpp::yaml-cpp)
elseif(TARGET yaml-cpp)
  set(ATTNJIT_YAML_TARGET yaml-cpp)
else()
  message(FATAL_ERROR "yaml-cpp was found but exports no known target")
endif()

if(ATTNJIT_BUILD_CLI)
  find_package(CLI11 REQUIRED)
endif()

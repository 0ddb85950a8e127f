# Third-party packages, all from Debian 12 (scripts/setup.sh installs them). How each one is
# found, and the traps T1..T9 referred to below, are in docs/deps.md.
#
# Targets for the rest of the build:
#   protobuf::libprotobuf  gRPC::grpc++  gRPC::grpc_cpp_plugin   absl::status absl::statusor ...
#   SQLite::SQLite3  Threads::Threads  OpenMP::OpenMP_C  OpenMP::OpenMP_CXX
#   GTest::gtest_main      (with TESSERA_BUILD_TESTS, the default; tests and benchmarks only)
#   nlohmann_json::nlohmann_json  CLI11::CLI11  xgboost::xgboost  onnx_proto
#   PostgreSQL::PostgreSQL (libpq)
#   prometheus-cpp::core prometheus-cpp::pull (the server's /metrics endpoint)
#   OpenSSL::SSL OpenSSL::Crypto (the TLS files' checks, server/tls.h)
#   tessera::openblas      (if found, with TESSERA_BUILD_TESTS; benchmarks only, the CPU anchor)
#   DNNL::dnnl             (if found, with TESSERA_BUILD_TESTS; benchmarks only, oneDNN as the
#                           conv/GEMM anchor)
#   tessera::nvrtc         (if TESSERA_WITH_CUDA) NVRTC, without the libcuda stub
#   tessera::cuda_headers  (if TESSERA_WITH_CUDA) cuda.h & co.; libcuda itself is dlopen()ed
# Both CUDA targets carry the compile definition TESSERA_WITH_CUDA=1.
include_guard(GLOBAL)
include(CMakeDependentOption)

# Protobuf first, in module mode: Debian ships no protobuf CMake config, and gRPC's config
# looks for it too.
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
# OpenSSL, which gRPC's TLS uses: the server and the clients check their TLS files with it
# (server/tls.h) before gRPC sees them.
find_package(OpenSSL REQUIRED)
find_package(absl CONFIG REQUIRED)  # 20220623: no absl::log; its own string_view (T4)
find_package(SQLite3 REQUIRED)
# libpq (libpq-dev) for the PostgreSQL records database; the server binaries (postgresql) are
# only for its tests, found at run time.
find_package(PostgreSQL REQUIRED)
# GoogleTest (libgtest-dev, scripts/packages-test.txt) only for tests/ and the benchmarks.
if(TESSERA_BUILD_TESTS)
  find_package(GTest REQUIRED)
  set(TESSERA_GTEST_SUMMARY "${GTest_VERSION}")
else()
  set(TESSERA_GTEST_SUMMARY "not needed (TESSERA_BUILD_TESTS=OFF)")
endif()
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS C CXX)
find_package(nlohmann_json 3 CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
# ONNX (libonnx-dev 1.12): only its protobuf messages, for the model importer in frontend/.
# Debian generated them for protobuf 3.21, the version found above; the imported target
# onnx_proto carries ONNX_ML=1 and ONNX_NAMESPACE=onnx.
find_package(ONNX CONFIG REQUIRED)
# zlib (zlib1g-dev): CRC-32 and inflate of the .npz archives in frontend/npy.h.
find_package(ZLIB REQUIRED)
# prometheus-cpp (prometheus-cpp-dev 1.0.1): the server's metrics and their HTTP endpoint (its
# pull exposer, on Debian's civetweb). Its config also wants CURL and ZLIB for the push side,
# which we do not use; the package depends on both.
find_package(prometheus-cpp CONFIG REQUIRED)

# XGBoost: Debian's CMake config is fatally broken (T2), so import the C API by hand.
find_path(XGBOOST_INCLUDE_DIR xgboost/c_api.h REQUIRED)
find_library(XGBOOST_LIBRARY xgboost REQUIRED)
if(NOT TARGET xgboost::xgboost)
  add_library(xgboost::xgboost UNKNOWN IMPORTED)
  set_target_properties(xgboost::xgboost PROPERTIES
    IMPORTED_LOCATION "${XGBOOST_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${XGBOOST_INCLUDE_DIR}")
endif()
set(TESSERA_XGBOOST_VERSION "found")
if(EXISTS "${XGBOOST_INCLUDE_DIR}/xgboost/version_config.h")
  file(STRINGS "${XGBOOST_INCLUDE_DIR}/xgboost/version_config.h" _xgb_ver
       REGEX "#define XGBOOST_VER_(MAJOR|MINOR|PATCH) ")
  string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3"
         TESSERA_XGBOOST_VERSION "${_xgb_ver}")
endif()

# The benchmarks' anchors (scripts/packages-test.txt), looked for only with TESSERA_BUILD_TESTS.
if(TESSERA_BUILD_TESTS)
  # OpenBLAS: only the benchmarks use it, as the anchor for CPU matmul. Optional.
  find_library(OPENBLAS_LIBRARY openblas)
  find_path(OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas)
  if(OPENBLAS_LIBRARY AND OPENBLAS_INCLUDE_DIR)
    if(NOT TARGET tessera::openblas)
      add_library(tessera::openblas UNKNOWN IMPORTED)
      set_target_properties(tessera::openblas PROPERTIES
        IMPORTED_LOCATION "${OPENBLAS_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${OPENBLAS_INCLUDE_DIR}")
    endif()
    set(TESSERA_OPENBLAS_SUMMARY "yes")
  else()
    set(TESSERA_OPENBLAS_SUMMARY "no (benchmarks without the BLAS anchor)")
  endif()

  # oneDNN: only bench_shapes and its anchor test use it. Optional. Its package config requires
  # OpenCL (Debian's oneDNN has the OpenCL GPU runtime) and fails the configure, QUIET or not,
  # where the OpenCL loader's -dev package is missing: look for OpenCL first and leave oneDNN out
  # without it. Found here, at the top, so bench/ and tests/bench/ see the same imported target.
  find_package(OpenCL QUIET)
  if(OpenCL_FOUND)
    find_package(dnnl CONFIG QUIET)
  endif()
  if(TARGET DNNL::dnnl)
    set(TESSERA_DNNL_SUMMARY "yes")
  elseif(NOT OpenCL_FOUND)
    set(TESSERA_DNNL_SUMMARY "no (no OpenCL loader: ocl-icd-opencl-dev)")
  else()
    set(TESSERA_DNNL_SUMMARY "no (libdnnl-dev)")
  endif()
else()
  set(TESSERA_OPENBLAS_SUMMARY "not looked for (TESSERA_BUILD_TESTS=OFF)")
  set(TESSERA_DNNL_SUMMARY "not looked for (TESSERA_BUILD_TESTS=OFF)")
endif()

# CUDA: optional. We need NVRTC (compile kernels, no GPU needed) and the headers (cuda.h);
# the driver is dlopen("libcuda.so.1")ed at run time, so nothing ever links libcuda.
find_package(CUDAToolkit QUIET)
set(TESSERA_CUDA_AVAILABLE OFF)
if(CUDAToolkit_FOUND)
  find_path(TESSERA_NVRTC_INCLUDE_DIR nvrtc.h
            HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include NO_DEFAULT_PATH)
  if(NOT CUDA_nvrtc_LIBRARY)
    find_library(CUDA_nvrtc_LIBRARY nvrtc HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  endif()
  if(TESSERA_NVRTC_INCLUDE_DIR AND CUDA_nvrtc_LIBRARY)
    set(TESSERA_CUDA_AVAILABLE ON)
  endif()
endif()
# ON by default where CUDA is there; -DTESSERA_WITH_CUDA=OFF builds the CPU-only system.
cmake_dependent_option(TESSERA_WITH_CUDA "Build the CUDA target (NVRTC builder, CUDA runner)" ON
                       "TESSERA_CUDA_AVAILABLE" OFF)
if(TESSERA_WITH_CUDA)
  # T1: CMake 3.25's CUDA::nvrtc depends on the libcuda *stub*; a binary that ends up with
  # NEEDED libcuda.so.1 cannot start on a machine without a driver. Import libnvrtc alone.
  if(NOT TARGET tessera::nvrtc)
    add_library(tessera::nvrtc SHARED IMPORTED)
    set_target_properties(tessera::nvrtc PROPERTIES
      IMPORTED_LOCATION "${CUDA_nvrtc_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${TESSERA_NVRTC_INCLUDE_DIR}"
      INTERFACE_COMPILE_DEFINITIONS "TESSERA_WITH_CUDA=1")
  endif()
  if(NOT TARGET tessera::cuda_headers)
    add_library(tessera::cuda_headers INTERFACE IMPORTED)
    set_target_properties(tessera::cuda_headers PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${TESSERA_NVRTC_INCLUDE_DIR}"
      INTERFACE_COMPILE_DEFINITIONS "TESSERA_WITH_CUDA=1"
      INTERFACE_LINK_LIBRARIES "${CMAKE_DL_LIBS}")
  endif()
  set(TESSERA_CUDA_SUMMARY "ON (CUDA ${CUDAToolkit_VERSION}, NVRTC ${CUDA_nvrtc_LIBRARY})")
elseif(TESSERA_CUDA_AVAILABLE)
  set(TESSERA_CUDA_SUMMARY "OFF (turned off)")
else()
  set(TESSERA_CUDA_SUMMARY "OFF (no CUDA toolkit with NVRTC found)")
endif()

message(STATUS "Tessera dependencies: protobuf ${Protobuf_VERSION}, gRPC ${gRPC_VERSION}, "
               "abseil ${absl_VERSION}, SQLite ${SQLite3_VERSION}, "
               "libpq ${PostgreSQL_VERSION_STRING}, GTest ${TESSERA_GTEST_SUMMARY}, "
               "XGBoost ${TESSERA_XGBOOST_VERSION}, OpenMP ${OpenMP_CXX_VERSION}, "
               "nlohmann_json ${nlohmann_json_VERSION}, CLI11 ${CLI11_VERSION}, ONNX ${ONNX_VERSION}, "
               "OpenBLAS ${TESSERA_OPENBLAS_SUMMARY}, oneDNN ${TESSERA_DNNL_SUMMARY}; CUDA ${TESSERA_CUDA_SUMMARY}")

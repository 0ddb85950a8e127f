# Helpers that every folder uses to declare its targets (docs/architecture.md, after abseil's
# absl_cc_library). Sorted, explicit source lists; a target links only what it names.
#
#   tessera_cc_library(NAME schedule
#     HDRS schedule.h trace.h
#     SRCS schedule.cc trace.cc
#     DEPS tessera::ir tessera::base absl::status absl::statusor)
#       -> static library tessera_schedule, alias tessera::schedule. The repository root is a
#          PUBLIC include directory (#include "schedule/trace.h"); DEPS are linked PUBLIC.
#          Without SRCS (header-only) it is an INTERFACE library instead.
#          With UNITY its sources are compiled as unity files of at most 8 (CMake's UNITY_BUILD;
#          _tessera_unity below), unless -DTESSERA_UNITY_BUILD=OFF.
#
#   tessera_cc_test(NAME schedule_trace_test SRCS trace_test.cc DEPS tessera::schedule
#     [LABELS gpu ...] [TIMEOUT seconds] [SERIAL])
#       -> executable build/tests/schedule_trace_test, linked with GTest::gtest_main; each TEST in
#          it becomes one CTest test, discovered when ctest runs (the build never runs test
#          binaries). TIMEOUT defaults to 600 s per test. GPU tests get LABELS gpu and skip
#          themselves with GTEST_SKIP() where there is no device (reported as skipped). SERIAL
#          tests (their assertions depend on timings) run while no other test runs.
#          TESSERA_SOURCE_DIR is defined to the repository root (a string) for golden files.
#
#   tessera_cc_binary(NAME tessera SRCS main.cc DEPS tessera::tuner ...)
#       -> executable build/bin/<NAME>.
include_guard(GLOBAL)
include(GoogleTest)

set(TESSERA_TEST_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests")

# Unity builds (docs/deps.md §4): a library marked UNITY compiles its .cc files in a few unity
# files that each #include several of them, so that the headers they share (abseil, the standard
# library, nlohmann/json, gRPC) are parsed and their inline code compiled once per unity file, not
# once per file. A cold build of `tessera` took 784 CPU seconds without them. The price: two
# files of one library must not define file-local helpers (in `namespace {` or `static`) of the
# same name, or the compiler says "redefinition" (or "ambiguous") naming both; and a change to one
# file recompiles its unity file. OFF compiles every file alone (for a tight edit-compile loop).
option(TESSERA_UNITY_BUILD "Compile the libraries marked UNITY (and cli/) as unity files" ON)

# Makes `target`'s .cc files unity files of at most `max_files` each, as evenly filled as may be
# (23 files at most 8 a file: 8, 8, 7).
function(_tessera_unity target max_files)
  if(NOT TESSERA_UNITY_BUILD)
    return()
  endif()
  get_target_property(srcs ${target} SOURCES)
  list(FILTER srcs INCLUDE REGEX "\\.cc$")
  list(LENGTH srcs n)
  if(n LESS 2)
    return()
  endif()
  math(EXPR files "(${n} + ${max_files} - 1) / ${max_files}")
  math(EXPR batch "(${n} + ${files} - 1) / ${files}")
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${batch})
  # In a unity file every .cc is an included file, and gcc warns about a class in an included
  # file that holds a type of the anonymous namespace (a header's problem, not a .cc's).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
endfunction()

function(_tessera_add_warnings target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE ${TESSERA_WARNING_FLAGS})
  endif()
endfunction()

function(tessera_cc_library)
  cmake_parse_arguments(TCL "UNITY" "NAME" "HDRS;SRCS;DEPS" ${ARGN})
  if(NOT TCL_NAME)
    message(FATAL_ERROR "tessera_cc_library: NAME is required")
  endif()
  if(TCL_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tessera_cc_library(${TCL_NAME}): unknown arguments ${TCL_UNPARSED_ARGUMENTS}")
  endif()
  set(target tessera_${TCL_NAME})
  if(TCL_SRCS)
    add_library(${target} STATIC ${TCL_SRCS} ${TCL_HDRS})
    target_include_directories(${target} PUBLIC "${PROJECT_SOURCE_DIR}")
    target_link_libraries(${target} PUBLIC ${TCL_DEPS})
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    _tessera_add_warnings(${target})
    if(TCL_UNITY)
      _tessera_unity(${target} 8)
    endif()
  else()
    add_library(${target} INTERFACE ${TCL_HDRS})
    target_include_directories(${target} INTERFACE "${PROJECT_SOURCE_DIR}")
    target_link_libraries(${target} INTERFACE ${TCL_DEPS})
  endif()
  add_library(tessera::${TCL_NAME} ALIAS ${target})
endfunction()

function(tessera_cc_test)
  cmake_parse_arguments(TCT "SERIAL" "NAME;TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  if(NOT TCT_NAME OR NOT TCT_SRCS)
    message(FATAL_ERROR "tessera_cc_test: NAME and SRCS are required")
  endif()
  if(TCT_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tessera_cc_test(${TCT_NAME}): unknown arguments ${TCT_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TCT_TIMEOUT)
    set(TCT_TIMEOUT 600)
  endif()
  add_executable(${TCT_NAME} ${TCT_SRCS})
  target_include_directories(${TCT_NAME} PRIVATE "${PROJECT_SOURCE_DIR}")
  target_compile_definitions(${TCT_NAME} PRIVATE TESSERA_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  target_link_libraries(${TCT_NAME} PRIVATE ${TCT_DEPS} GTest::gtest_main)
  set_target_properties(${TCT_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${TESSERA_TEST_OUTPUT_DIRECTORY}")
  _tessera_add_warnings(${TCT_NAME})

  # PRE_TEST: the list of tests is read from the binary when ctest runs, never during the build
  # (a binary that cannot start here must not break the build; docs/deps.md T1).
  gtest_discover_tests(${TCT_NAME}
    DISCOVERY_MODE PRE_TEST
    DISCOVERY_TIMEOUT 120
    TEST_LIST ${TCT_NAME}_TESTS
    PROPERTIES TIMEOUT ${TCT_TIMEOUT} RUN_SERIAL ${TCT_SERIAL})

  # LABELS is a list, which gtest_discover_tests(PROPERTIES ...) would flatten into separate
  # arguments. Set it from a CTest include file that runs after discovery instead.
  if(TCT_LABELS)
    set(labels_file "${CMAKE_CURRENT_BINARY_DIR}/${TCT_NAME}_labels.cmake")
    file(WRITE "${labels_file}"
      "if(${TCT_NAME}_TESTS)\n"
      "  set_tests_properties(\${${TCT_NAME}_TESTS} PROPERTIES LABELS \"${TCT_LABELS}\")\n"
      "endif()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${labels_file}")
  endif()
endfunction()

function(tessera_cc_binary)
  cmake_parse_arguments(TCB "" "NAME" "SRCS;DEPS" ${ARGN})
  if(NOT TCB_NAME OR NOT TCB_SRCS)
    message(FATAL_ERROR "tessera_cc_binary: NAME and SRCS are required")
  endif()
  if(TCB_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tessera_cc_binary(${TCB_NAME}): unknown arguments ${TCB_UNPARSED_ARGUMENTS}")
  endif()
  add_executable(${TCB_NAME} ${TCB_SRCS})
  target_include_directories(${TCB_NAME} PRIVATE "${PROJECT_SOURCE_DIR}")
  target_link_libraries(${TCB_NAME} PRIVATE ${TCB_DEPS})
  _tessera_add_warnings(${TCB_NAME})
endfunction()

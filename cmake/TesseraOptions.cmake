# Project-wide compile settings applied per target, never through globals.

# tessera_set_warnings(<target>): the warning set every Tessera target builds clean with.
function(tessera_set_warnings target)
  # -Wmissing-field-initializers flags C++20 designated initializers that leave members to their
  # default member initializers, which is what options structs are for.
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter
                                           -Wno-missing-field-initializers)
  if(TESSERA_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=${TESSERA_SANITIZE} -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=${TESSERA_SANITIZE})
    # g++'s two runtimes would send UBSan's reports to stderr whatever log_path says: the file
    # says why.
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "EXECUTABLE" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU"
       AND TESSERA_SANITIZE MATCHES "address" AND TESSERA_SANITIZE MATCHES "undefined")
      target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tests/sanitizers/ubsan_log_path.cc)
    endif()
  endif()
endfunction()

# tessera_set_test_options(<target>): tessera_set_warnings, and a test's own sources built at -O1
# (the libraries it tests keep the build type's level): they are assertions and fixtures, and -O1
# compiles them in about three quarters of -O2's time, and test sources are the larger part of a
# cold build (docs/developing.md, "CI"). The option comes after the build type's, so it wins.
function(tessera_set_test_options target)
  tessera_set_warnings(${target})
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release,RelWithDebInfo,MinSizeRel>:-O1>)
endfunction()

# tessera_add_test(<name> SOURCES ... LIBS ... [RUN_SERIAL]): a GoogleTest binary registered with
# CTest. RUN_SERIAL for tests that measure rates over time windows: ctest -j runs them alone.
function(tessera_add_test name)
  cmake_parse_arguments(ARG "RUN_SERIAL" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  tessera_set_test_options(${name})
  if(TARGET tessera_test_pch)
    target_precompile_headers(${name} REUSE_FROM tessera_test_pch)
  endif()
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  # Shared test helpers are included as "tests/support/...".
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  # Empty values would shift the property list, so only set what is given.
  set(props TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT "TESSERA_BIN_DIR=${PROJECT_BINARY_DIR}/bin")
  if(ARG_LABELS)
    list(APPEND props LABELS "${ARG_LABELS}")
  endif()
  if(ARG_RUN_SERIAL)
    list(APPEND props RUN_SERIAL TRUE)
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES ${props})
endfunction()

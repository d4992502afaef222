# tessera_add_program(<target> SOURCES <src>... [LIBS <lib>...] [TESSC_ARGS <arg>...]
#                     [TESSC_OPTIONS <option>...])
#
# Builds an executable from Tessera program sources and embeds tessc's schedules in it:
# for each source, tessc runs at build time (again whenever the source or anything it includes
# changes) and writes <build>/tessc/<target>/<source>.schedules.cc, which registers every
# parallel_for site of that source with the runtime (<tessera/schedule.h>). A site tessc cannot
# parallelize fails the build with clang-style diagnostics.
#
# tessc sees the target's own include directories and compile definitions (including those it
# inherits from linked libraries) plus -std=c++20; TESSC_ARGS are appended to that command line.
# TESSC_OPTIONS are tessc's own options (before `--`), e.g. --prefer-data-parallel.
# The target links tessera::runtime plus LIBS. Set properties, options and further sources on the
# target as usual afterwards (tessc picks up include directories and definitions added later too).
#
# Without tessc (TESSERA_BUILD_COMPILER=OFF, no Clang 16) the program still builds and runs
# serially; a warning says so at configure time.
#
# Available after find_package(Tessera) (installed) or add_subdirectory(<tessera source>)
# (vendored); see docs/cmake.md.
function(tessera_add_program target)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;TESSC_ARGS;TESSC_OPTIONS" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "tessera_add_program(${target}): SOURCES is required")
  endif()
  add_executable(${target} ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE tessera::runtime ${ARG_LIBS})
  if(NOT TARGET tessera::tessc)
    message(WARNING "tessera_add_program(${target}): tessc is not built; "
                    "'${target}' will run every parallel_for serially")
    return()
  endif()
  # tessc built in this tree (Tessera's own, or vendored): a dependency on its target; installed
  # (an imported executable): on its file.
  get_target_property(tessc_target tessera::tessc ALIASED_TARGET)
  if(NOT tessc_target)
    set(tessc_target "$<TARGET_FILE:tessera::tessc>")
  endif()

  # /usr/include as a -I would be searched before Clang's own builtin headers and break
  # libstdc++'s #include_next chains; it is a system directory anyway.
  set(includes "$<FILTER:$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>,EXCLUDE,^/usr/include/?$>")
  set(defines "$<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>")
  set(outdir "${CMAKE_CURRENT_BINARY_DIR}/tessc/${target}")
  foreach(src IN LISTS ARG_SOURCES)
    get_filename_component(abs "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT abs MATCHES "\\.(cc|cpp|cxx|c\\+\\+|C)$")
      continue()  # headers and other non-C++ sources have no call sites of their own
    endif()
    file(RELATIVE_PATH rel "${CMAKE_CURRENT_SOURCE_DIR}" "${abs}")
    string(REGEX REPLACE "[/.]" "_" stem "${rel}")
    set(out "${outdir}/${stem}.schedules.cc")
    add_custom_command(
      OUTPUT "${out}"
      COMMAND "${CMAKE_COMMAND}" -E make_directory "${outdir}"
      COMMAND "$<TARGET_FILE:tessera::tessc>" --emit=cpp -o "${out}" --depfile "${out}.d" ${ARG_TESSC_OPTIONS} "${abs}"
              -- -std=c++20
              "$<$<BOOL:${includes}>:-I$<JOIN:${includes},;-I>>"
              "$<$<BOOL:${defines}>:-D$<JOIN:${defines},;-D>>"
              ${ARG_TESSC_ARGS}
      DEPENDS "${abs}" "${tessc_target}"
      DEPFILE "${out}.d"
      COMMENT "tessc: schedules for ${rel}"
      COMMAND_EXPAND_LISTS
      VERBATIM)
    target_sources(${target} PRIVATE "${out}")
  endforeach()
endfunction()

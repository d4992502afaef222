# Install rules and the CMake package (find_package(Tessera)); see docs/cmake.md.
#
# Each module's CMakeLists.txt ends with its own install block calling the functions below; the
# top-level CMakeLists.txt calls tessera_install_package() once, after every module.
# With TESSERA_INSTALL off (the default when Tessera is vendored with add_subdirectory) they do
# nothing.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TESSERA_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/Tessera")

# tessera_install_library(<target> [HEADERS <dir>...]): installs a library into the export set as
# tessera::<name> (<name>: the target's name without "tessera_"), and the headers under each <dir>
# (a folder whose contents go to <prefix>/include, e.g. "include/").
#
# The library's public include directories are paths of this build tree; they are marked as such
# ($<BUILD_INTERFACE:...>) and the installed package gets <prefix>/include instead. Call this after
# every target_include_directories() of the target.
function(tessera_install_library target)
  if(NOT TESSERA_INSTALL)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "HEADERS" ${ARGN})
  get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
  set(wrapped "")
  if(dirs)
    foreach(dir IN LISTS dirs)
      if(dir MATCHES "^\\$<")
        list(APPEND wrapped "${dir}")  # already a generator expression: left as given
      else()
        list(APPEND wrapped "$<BUILD_INTERFACE:${dir}>")
      endif()
    endforeach()
  endif()
  list(APPEND wrapped "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${wrapped}")
  string(REGEX REPLACE "^tessera_" "" export_name "${target}")
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
  install(TARGETS ${target} EXPORT TesseraTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  foreach(dir IN LISTS ARG_HEADERS)
    install(DIRECTORY ${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
            FILES_MATCHING PATTERN "*.h")
  endforeach()
endfunction()

# tessera_install_program(<target>): installs an executable into <prefix>/bin and the export set
# as tessera::<target>, so that projects can name it (e.g. $<TARGET_FILE:tessera::tessera>).
function(tessera_install_program target)
  if(NOT TESSERA_INSTALL)
    return()
  endif()
  install(TARGETS ${target} EXPORT TesseraTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endfunction()

# tessera_install_package(): TesseraConfig.cmake, its version file, the exported targets and
# tessera_add_program(), under <prefix>/lib/cmake/Tessera. Every path in them is relative to the
# prefix, so an installed tree can be moved.
function(tessera_install_package)
  if(NOT TESSERA_INSTALL)
    return()
  endif()
  set(gen "${PROJECT_BINARY_DIR}/package")
  configure_package_config_file(
    "${PROJECT_SOURCE_DIR}/cmake/TesseraConfig.cmake.in" "${gen}/TesseraConfig.cmake"
    INSTALL_DESTINATION "${TESSERA_INSTALL_CMAKEDIR}"
    NO_SET_AND_CHECK_MACRO)
  # 0.x: a minor version may change the API.
  write_basic_package_version_file("${gen}/TesseraConfigVersion.cmake"
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
  install(EXPORT TesseraTargets NAMESPACE tessera:: DESTINATION "${TESSERA_INSTALL_CMAKEDIR}")
  install(FILES "${gen}/TesseraConfig.cmake" "${gen}/TesseraConfigVersion.cmake"
                "${PROJECT_SOURCE_DIR}/cmake/TesseraProgram.cmake"
          DESTINATION "${TESSERA_INSTALL_CMAKEDIR}")
endfunction()

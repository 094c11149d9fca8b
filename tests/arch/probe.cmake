# probe.cmake - build one probe target and check the outcome (tests/arch/CMakeLists.txt).
#   cmake -DBUILD_DIR=DIR -DCONFIG=CFG -DTARGET=NAME -DHEADER=FILE.h -DEXPECT=private|public -P probe.cmake
# private: the build must fail, and fail because HEADER is not found (a probe broken for any other
#          reason, or a header that became visible, fails the test);
# public:  the build must succeed.
foreach(_var BUILD_DIR TARGET HEADER EXPECT)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "probe.cmake: -D${_var}=... is required")
  endif()
endforeach()
set(_config "")
if(CONFIG)
  set(_config --config ${CONFIG})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${TARGET} ${_config}
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
string(REPLACE "." "\\." _re "${HEADER}")
# gcc: "fatal error: x.h: No such file or directory"; clang: "fatal error: 'x.h' file not found"
string(REGEX MATCH "'?${_re}'?:? (No such file or directory|file not found)" _not_found "${_out}")
if(EXPECT STREQUAL "private")
  if(_rc EQUAL 0)
    message(FATAL_ERROR "${HEADER} is visible outside its module: ${TARGET}, which links every stepsim "
      "library, compiled an #include of it. An internal header must stay on its own target's PRIVATE "
      "include path.")
  elseif(NOT _not_found)
    message(FATAL_ERROR "${TARGET} failed to build, but not because ${HEADER} is missing:\n${_out}")
  endif()
  message(STATUS "ok: ${HEADER} is not visible to another module (${TARGET} fails: header not found)")
elseif(EXPECT STREQUAL "public")
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${TARGET} (an #include of the public ${HEADER}) failed to build:\n${_out}")
  endif()
  message(STATUS "ok: the public ${HEADER} builds in ${TARGET}")
else()
  message(FATAL_ERROR "probe.cmake: EXPECT must be private or public, not ${EXPECT}")
endif()

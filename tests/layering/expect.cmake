# tests/layering/expect.cmake: builds one probe target of the build tree BUILD and checks the
# outcome: EXPECT "fail" needs the build to fail with MATCH in its output (the layering error),
# EXPECT "pass" needs it to succeed.  cmake -DBUILD=dir -DTARGET=t -DEXPECT=fail|pass -DMATCH=re -P
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD} --target ${TARGET}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(EXPECT STREQUAL "pass")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "layering probe ${TARGET} should build but did not:\n${out}")
  endif()
  message(STATUS "layering probe ${TARGET}: builds, as it should")
else()
  if(rc EQUAL 0)
    message(FATAL_ERROR "layering probe ${TARGET} built: a forbidden include compiles (the layering is not enforced)")
  endif()
  if(NOT out MATCHES "${MATCH}")
    message(FATAL_ERROR "layering probe ${TARGET} failed, but not for the layering (expected /${MATCH}/):\n${out}")
  endif()
  message(STATUS "layering probe ${TARGET}: refused, as it should (/${MATCH}/)")
endif()

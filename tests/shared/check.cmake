# tests/shared/check.cmake — the test `shared`: the conformance cases, the spec and the real CDC
# data live in the project's shared folder next to the clone (../shared, or $WIDEN_SHARED); a clone
# without it gets this one clear failure (the tests that need the folder skip, saying so).
#   cmake -DSHARED=dir -P tests/shared/check.cmake
set(missing "")
foreach(sub cases data spec)
  if(NOT IS_DIRECTORY "${SHARED}/${sub}")
    list(APPEND missing "${SHARED}/${sub}")
  endif()
endforeach()
if(missing)
  string(REPLACE ";" ", " missing "${missing}")
  message(FATAL_ERROR
    "the project's shared folder is missing: ${missing} not found. It holds the conformance cases "
    "(../shared/cases: the conformance suite, unit.test_json's case rows, scripts/test's cases), the "
    "real CDC data (../shared/data: unit.test_decode_debezium, integration.test_pipeline's products) "
    "and the spec. Put it next to this clone as ../shared (or point WIDEN_SHARED at it when running ctest "
    "by hand); the tests that need it are skipped or fail until then.")
endif()
message(STATUS "shared folder: ${SHARED} (cases, data, spec)")

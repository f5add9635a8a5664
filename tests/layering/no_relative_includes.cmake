# tests/layering/no_relative_includes.cmake: the other half of the layering.
# wd_expose gives each library only the folders it links, but a quoted include is first looked up
# next to the including file, so `#include "../ingest/consumer.h"` in join/ would compile whatever
# the include paths say. No product source may include through a relative path ("./" or "../");
# every include names its folder from the root ("ingest/consumer.h"), which the include paths then
# allow or refuse. cmake -DROOT=<source dir> -DDIRS="a;b" [-DEXPECT=fail] -P no_relative_includes.cmake
set(bad "")
foreach(d ${DIRS})
  file(GLOB_RECURSE files ${ROOT}/${d}/*.c ${ROOT}/${d}/*.h)
  foreach(f ${files})
    file(STRINGS ${f} hits REGEX "^[ \t]*#[ \t]*include[ \t]*\"\\.\\.?/")
    foreach(h ${hits})
      string(APPEND bad "\n  ${f}: ${h}")
    endforeach()
  endforeach()
endforeach()
if(EXPECT STREQUAL "fail")
  if(bad STREQUAL "")
    message(FATAL_ERROR "the scan found no relative include in ${DIRS}, where the probe has one")
  endif()
  message(STATUS "relative include found, as it should be:${bad}")
elseif(NOT bad STREQUAL "")
  message(FATAL_ERROR "relative includes (name the folder from the root instead, e.g. \"ingest/consumer.h\"):${bad}")
else()
  message(STATUS "no relative includes in ${DIRS}")
endif()

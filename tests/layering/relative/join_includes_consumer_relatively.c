/* A probe for tests/layering/no_relative_includes.cmake: a source of the engine that reaches a
 * folder it may not use through a path relative to its own directory, which the compiler resolves
 * before any include path (so wd_expose cannot refuse it). The scan must find it. Never built. */
#include "../../../ingest/consumer.h"

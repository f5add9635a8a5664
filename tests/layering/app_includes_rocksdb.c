/* tests/layering: an app/ source that includes RocksDB; must not compile. */
#include <rocksdb/c.h>

#include "app/runtime/pipeline.h"

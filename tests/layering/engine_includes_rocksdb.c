/* tests/layering: a join/ engine source that includes RocksDB; must not compile (wd_join). */
#include <rocksdb/c.h>

#include "join/merge.h"

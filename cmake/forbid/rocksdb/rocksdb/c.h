/* cmake/forbid/rocksdb/rocksdb/c.h — stands in front of the real RocksDB header on the include path
 * of every library except wd_store (join/store_rocksdb.c), so that including RocksDB anywhere else
 * fails the build (see CMakeLists.txt, wd_forbid; checked by tests/layering). */
#error "widen layering: only join/store_rocksdb.c (library wd_store) may include RocksDB; use join/store.h"

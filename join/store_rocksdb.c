/*
 * join/store_rocksdb.c — the RocksDB store, and the only file of widen that includes RocksDB.
 *
 * Column families: "default" (unused, RocksDB requires it), "state" (key -> entry) and "meta"
 * ("offset/<topic>/<partition>" -> decimal next offset). One shared LRU block cache, full bloom
 * filters (10 bits/key), lz4 with zstd for the bottommost level (none when the library lacks
 * them). A write batch becomes one rocksdb_writebatch_t over "state" and "meta" and one
 * rocksdb_write, so rows and offsets are durable together.
 *
 * Tombstone retention: with opts->tombstone_retention_ms >= 0 a compaction filter on "state"
 * drops tombstone entries (row_codec.h: byte 1 bit 0) whose written-ms (bytes 2-9, LE) is older
 * than now - retention. RocksDB does not own a compaction filter: it lives in the store and is
 * destroyed after the DB is closed. The filter runs on RocksDB's background threads; its state
 * (the retention) is read-only.
 *
 * C API facts (toolchain-notes §3): errptr is written only on failure, so it is reset to NULL
 * before each call and released with rocksdb_free; set_filter_policy takes ownership of the
 * policy; set_block_based_table_factory copies the table options.
 */
#include <dirent.h>
#include <errno.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "join/store.h"
#include "join/store_impl.h"

#define WD_RDB_DEFAULT_CACHE (64u * 1024u * 1024u)
#define WD_RDB_BLOCK_SIZE (16u * 1024u)
/* Entry layout facts the filter relies on (join/row_codec.h; kept local so the store does not
 * depend on the codec's types). */
#define WD_RDB_ENTRY_VERSION 1
#define WD_RDB_ENTRY_TOMBSTONE 0x01
#define WD_RDB_TOMBSTONE_MIN_LEN 10

enum { WD_CF_DEFAULT, WD_CF_STATE, WD_CF_META, WD_CF_COUNT };
static const char *const wd_rdb_cf_names[WD_CF_COUNT] = {"default", "state", "meta"};

/* The compaction filter's state: read-only after open, shared with RocksDB's threads. */
typedef struct wd_rdb_retention {
  uint64_t retention_ms;
} wd_rdb_retention_t;

typedef struct wd_store_rdb {
  struct wd_store base; /* first: wd_store_t * <-> wd_store_rdb_t * */
  char *dir;
  rocksdb_t *db;
  rocksdb_column_family_handle_t *cf[WD_CF_COUNT];
  rocksdb_options_t *db_opts;
  rocksdb_options_t *cf_opts[WD_CF_COUNT];
  rocksdb_block_based_table_options_t *table_opts;
  rocksdb_cache_t *cache;
  rocksdb_compactionfilter_t *filter; /* NULL without retention; outlives db */
  wd_rdb_retention_t retention;
  rocksdb_writeoptions_t *wopts;
  rocksdb_writeoptions_t *wopts_sync; /* fsync'ed writes (wd_store_write_sync) */
  rocksdb_readoptions_t *ropts;
  rocksdb_readoptions_t *scan_ropts; /* fill_cache off: a full scan must not evict hot blocks */
  rocksdb_writebatch_t *wb; /* reused by each write */
  char *secondary; /* read-only secondary instance: its own info-log directory
                                        (removed at close), else NULL */
  /* multi_get scratch, grown on demand */
  rocksdb_pinnableslice_t **pins;
  char **errs;
  size_t scratch_cap;
  uint64_t min_free_bytes; /* the disk guard (wd_store_options_t.min_free_bytes); 0: off */
} wd_store_rdb_t;

/* ---- the disk guard ------------------------------------------------------------------------ */

/* The last measure of the guarded store's filesystem (see store.h): free bytes (-1: none yet)
 * and whether they were below the store's minimum. Written by the store's thread, read by any
 * (the metrics and readiness threads). */
static _Atomic int64_t wd_rdb_disk_free = -1;
static _Atomic bool wd_rdb_disk_is_short = false;
/* the guarded directory and its minimum, for wd_store_disk_refresh: written once, by the first
 * open of a guarded store, before wd_rdb_disk_dir_set is (release); read after it (acquire) */
static char wd_rdb_disk_dir[4096];
static uint64_t wd_rdb_disk_min;
static _Atomic bool wd_rdb_disk_dir_set = false;

int64_t wd_store_disk_free_bytes(void) { return atomic_load(&wd_rdb_disk_free); }
bool wd_store_disk_short(void) { return atomic_load(&wd_rdb_disk_is_short); }

int64_t wd_store_disk_measure(const char *dir) {
  struct statvfs sv;
  if (!dir || statvfs(dir, &sv) != 0) return -1;
  unsigned __int128 b = (unsigned __int128)sv.f_bavail * (sv.f_frsize ? sv.f_frsize : sv.f_bsize);
  return b > INT64_MAX ? INT64_MAX : (int64_t)b;
}

int64_t wd_store_disk_refresh(void) {
  if (!atomic_load_explicit(&wd_rdb_disk_dir_set, memory_order_acquire)) return atomic_load(&wd_rdb_disk_free);
  int64_t free_b = wd_store_disk_measure(wd_rdb_disk_dir);
  if (free_b >= 0) {
    atomic_store(&wd_rdb_disk_free, free_b);
    atomic_store(&wd_rdb_disk_is_short, (uint64_t)free_b < wd_rdb_disk_min);
  }
  return free_b;
}

/* Before each write of a guarded store: E_STATE_DISK_FULL when the free bytes of its filesystem
 * (the ones an unprivileged writer may use, statvfs f_bavail) are below its minimum, so that the
 * write is refused by widen, cleanly, before RocksDB fails on a full disk (Debian's RocksDB
 * asserts in its file writer then: an abort, not an error). */
static wd_error_t *wd_rdb_disk_check(wd_store_rdb_t *rs) {
  if (!rs->min_free_bytes) return NULL;
  int64_t free_b = wd_store_disk_measure(rs->dir);
  if (free_b < 0) return NULL; /* not measurable: RocksDB's own errors stay */
  bool is_short = (uint64_t)free_b < rs->min_free_bytes;
  atomic_store(&wd_rdb_disk_free, free_b);
  atomic_store(&wd_rdb_disk_is_short, is_short);
  if (!is_short) return NULL;
  return wd_error_new(WD_ERR_IO, E_STATE_DISK_FULL,
                      "the state directory %s has %lld bytes free, below state.min-free-bytes (%llu): stopped "
                      "before the disk is full (the open commit is aborted, nothing is lost); free space on its "
                      "filesystem (or move state.dir to a larger one, or lower state.min-free-bytes) and start "
                      "widen again",
                      rs->dir, (long long)free_b, (unsigned long long)rs->min_free_bytes);
}

static const wd_store_ops_t wd_store_rdb_ops;

/*
 * The compaction filter callback (RocksDB background threads): returns 1 to drop an entry of
 * "state" that is a version-1 tombstone written more than retention_ms ago. Rows, unknown
 * versions, short values and tombstones stamped in the future are kept. Never changes values.
 */
static unsigned char wd_rdb_filter(void *state, int level, const char *key, size_t klen, const char *val, size_t vlen,
                                   char **new_val, size_t *new_vlen, unsigned char *changed) {
  const wd_rdb_retention_t *r = state;
  (void)level;
  (void)key;
  (void)klen;
  *new_val = NULL;
  *new_vlen = 0;
  *changed = 0;
  if (vlen < WD_RDB_TOMBSTONE_MIN_LEN) return 0;
  const uint8_t *p = (const uint8_t *)val;
  if (p[0] != WD_RDB_ENTRY_VERSION || !(p[1] & WD_RDB_ENTRY_TOMBSTONE)) return 0;
  uint64_t written = 0;
  for (int i = 7; i >= 0; i--) written = (written << 8) | p[2 + i];
  uint64_t now = (uint64_t)wd_wall_ms();
  return (now > written && now - written > r->retention_ms) ? 1 : 0;
}

/* The filter's state is owned by the store, so RocksDB's destructor call does nothing. */
static void wd_rdb_filter_destructor(void *state) { (void)state; }

static const char *wd_rdb_filter_name(void *state) {
  (void)state;
  return "widen.tombstone_retention";
}

/*
 * Frees everything the store holds, in dependency order: column family handles, then the DB,
 * then options, cache and the compaction filter (which must outlive the DB). Accepts a store in
 * any state of construction.
 */
static void wd_rdb_free(wd_store_rdb_t *rs) {
  if (!rs) return;
  for (int i = 0; i < WD_CF_COUNT; i++) {
    if (rs->cf[i]) rocksdb_column_family_handle_destroy(rs->cf[i]);
  }
  if (rs->db) rocksdb_close(rs->db);
  if (rs->wb) rocksdb_writebatch_destroy(rs->wb);
  if (rs->wopts) rocksdb_writeoptions_destroy(rs->wopts);
  if (rs->wopts_sync) rocksdb_writeoptions_destroy(rs->wopts_sync);
  if (rs->ropts) rocksdb_readoptions_destroy(rs->ropts);
  if (rs->scan_ropts) rocksdb_readoptions_destroy(rs->scan_ropts);
  for (int i = 0; i < WD_CF_COUNT; i++) {
    if (rs->cf_opts[i]) rocksdb_options_destroy(rs->cf_opts[i]);
  }
  if (rs->db_opts) rocksdb_options_destroy(rs->db_opts);
  if (rs->table_opts) rocksdb_block_based_options_destroy(rs->table_opts);
  if (rs->cache) rocksdb_cache_destroy(rs->cache);
  if (rs->filter) rocksdb_compactionfilter_destroy(rs->filter);
  if (rs->secondary) { /* the secondary's own directory holds only RocksDB's info logs */
    DIR *d = opendir(rs->secondary);
    struct dirent *de;
    char path[4096];
    while (d && (de = readdir(d)))
      if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
        snprintf(path, sizeof(path), "%s/%s", rs->secondary, de->d_name);
        unlink(path);
      }
    if (d) closedir(d);
    rmdir(rs->secondary);
    free(rs->secondary);
  }
  free(rs->pins);
  free(rs->errs);
  free(rs->dir);
  free(rs);
}

/* o with the RocksDB options string str applied on top (o is replaced: the result is the caller's).
 * A string RocksDB refuses is reported on stderr, naming what, and o is returned unchanged. */
static rocksdb_options_t *wd_rdb_options_string(rocksdb_options_t *o, const char *str, const char *what) {
  char *oerr = NULL;
  rocksdb_options_t *n = rocksdb_options_create();
  rocksdb_get_options_from_string(o, str, n, &oerr);
  if (oerr) {
    fprintf(stderr, "widen: RocksDB options (%s) ignored: %s\n", what, oerr);
    rocksdb_free(oerr);
    rocksdb_options_destroy(n);
    return o;
  }
  rocksdb_options_destroy(o);
  return n;
}

/*
 * Builds the DB and per-CF options into rs (cache, table options and filter included).
 * compress: lz4 + zstd bottommost when true, none otherwise. Replaces any options built before.
 */
static void wd_rdb_build_options(wd_store_rdb_t *rs, const wd_store_options_t *opts, int compress) {
  for (int i = 0; i < WD_CF_COUNT; i++) {
    if (rs->cf_opts[i]) rocksdb_options_destroy(rs->cf_opts[i]);
    rs->cf_opts[i] = NULL;
  }
  if (rs->db_opts) rocksdb_options_destroy(rs->db_opts);
  if (!rs->cache) {
    size_t cache_bytes = opts && opts->block_cache_bytes ? opts->block_cache_bytes : WD_RDB_DEFAULT_CACHE;
    rs->cache = rocksdb_cache_create_lru(cache_bytes);
  }
  if (!rs->table_opts) {
    rs->table_opts = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_cache(rs->table_opts, rs->cache);
    /* takes ownership of the policy */
    rocksdb_block_based_options_set_filter_policy(rs->table_opts, rocksdb_filterpolicy_create_bloom_full(10));
    rocksdb_block_based_options_set_cache_index_and_filter_blocks(rs->table_opts, 1);
    rocksdb_block_based_options_set_pin_l0_filter_and_index_blocks_in_cache(rs->table_opts, 1);
    rocksdb_block_based_options_set_format_version(rs->table_opts, 5);
    rocksdb_block_based_options_set_block_size(rs->table_opts, WD_RDB_BLOCK_SIZE);
  }
  rocksdb_options_t *o = rocksdb_options_create();
  rocksdb_options_set_create_if_missing(o, 1);
  rocksdb_options_set_create_missing_column_families(o, 1);
  rocksdb_options_set_block_based_table_factory(o, rs->table_opts); /* copies */
  rocksdb_options_set_compression(o, compress ? rocksdb_lz4_compression : rocksdb_no_compression);
  rocksdb_options_set_bottommost_compression(o, compress ? rocksdb_zstd_compression : rocksdb_no_compression);
  /* a whole-key bloom filter in the memtable: the batch's multi-get of keys the memtable does not
   * hold skips the skiplist search (bench/README.md, "RocksDB options": engine +12 % on 100k keys,
   * +40 % records per CPU s on a 10M-key space) */
  rocksdb_options_set_memtable_prefix_bloom_size_ratio(o, 0.1);
  rocksdb_options_set_memtable_whole_key_filtering(o, 1);
  /* benchmarks only (bench/README.md, "RocksDB options"): a RocksDB options string applied on top,
   * e.g. WIDEN_BENCH_ROCKSDB_OPTIONS="write_buffer_size=134217728;max_background_jobs=4" */
  const char *extra = getenv("WIDEN_BENCH_ROCKSDB_OPTIONS");
  if (extra && *extra) o = wd_rdb_options_string(o, extra, "WIDEN_BENCH_ROCKSDB_OPTIONS");
  rs->db_opts = o;
  for (int i = 0; i < WD_CF_COUNT; i++) rs->cf_opts[i] = rocksdb_options_create_copy(o);
  /* the memtable bloom filter only where the multi-get reads ("state"): "meta" is read a few
   * times at start, "default" not at all, and each memtable's filter (a tenth of
   * write_buffer_size) is zeroed when the memtable is made: at each open and after each flush */
  rocksdb_options_set_memtable_prefix_bloom_size_ratio(rs->cf_opts[WD_CF_DEFAULT], 0);
  rocksdb_options_set_memtable_prefix_bloom_size_ratio(rs->cf_opts[WD_CF_META], 0);
  /* memtable insert hints per prefix of the state keys (the namespace byte, the task and the first
   * byte of the key), which the C API offers only through an options string: the state writes each
   * commit's rows in key order (join/state.c), and with a hint the skip list goes on from the
   * previous insert's position instead of searching from the top (bench/README.md, "RocksDB
   * options": the skip-list search -53 % of its instructions, the state write -29 %). Only the
   * state family, and range deletions there never take a hint (store.h WD_STORE_RANGE_BEGIN_MAX:
   * RocksDB 7.8 shares the hints between row keys and range deletions). */
  rs->cf_opts[WD_CF_STATE] = wd_rdb_options_string(
      rs->cf_opts[WD_CF_STATE], "memtable_insert_with_hint_prefix_extractor=rocksdb.FixedPrefix.6", "built-in");
  if (rs->filter) rocksdb_options_set_compaction_filter(rs->cf_opts[WD_CF_STATE], rs->filter); /* borrows */
}

/* Whether RocksDB's open error of dir is a damaged or inconsistent state directory rather than
 * an I/O problem: its "Corruption:" status, or a file that CURRENT or the MANIFEST names and that
 * is gone ("No such file" of a file inside dir, with dir holding a CURRENT). */
static bool wd_rdb_is_corruption(const char *msg, const char *dir) {
  if (strstr(msg, "Corruption")) return true;
  if (!strstr(msg, "No such file")) return false;
  char cur[4096];
  snprintf(cur, sizeof(cur), "%s/CURRENT", dir);
  struct stat sb;
  return stat(cur, &sb) == 0 && (strstr(msg, "MANIFEST") || strstr(msg, ".sst") || strstr(msg, ".log"));
}

/* The file of dir a RocksDB error names (the first word that is a path in dir, or a MANIFEST-,
 * CURRENT, .sst or .log name), into out; "a file of the state directory" when none. */
static void wd_rdb_error_file(const char *msg, const char *dir, char *out, size_t cap) {
  size_t dn = strlen(dir);
  for (const char *p = msg; *p; p++) {
    if (p != msg && !strchr(" :\t(\"'", p[-1])) continue;
    size_t n = strcspn(p, " :,;\t\n)\"'");
    /* RocksDB glues some paths to the word before ("to be an sstable/dir/000012.sst") */
    for (size_t k = 1; k + dn < n; k++) {
      if (strncmp(p + k, dir, dn) == 0 && p[k + dn] == '/') {
        p += k;
        n -= k;
        break;
      }
    }
    const char *slash = memchr(p, '/', n) ? p + n : NULL;
    while (slash && slash > p && slash[-1] != '/') slash--;
    bool in_dir = strncmp(p, dir, dn) == 0 && p[dn] == '/';
    bool named = (n > 9 && !strncmp(p, "MANIFEST-", 9)) || (n == 7 && !strncmp(p, "CURRENT", 7)) ||
                 (n > 4 && (!strncmp(p + n - 4, ".sst", 4) || !strncmp(p + n - 4, ".log", 4)));
    if (in_dir && n > dn + 1) {
      snprintf(out, cap, "%.*s", (int)n, p);
      return;
    }
    if (named) { /* its base name, in dir */
      const char *base = slash ? slash : p;
      snprintf(out, cap, "%s/%.*s", dir, (int)(n - (size_t)(base - p)), base);
      return;
    }
  }
  snprintf(out, cap, "a file of the state directory");
}

/* E_STATE_CORRUPT for RocksDB's open error msg of dir: the file and what to do. */
static wd_error_t *wd_rdb_corrupt_error(const char *dir, const char *msg) {
  char file[4096];
  wd_rdb_error_file(msg, dir, file, sizeof(file));
  bool named = strstr(msg, "No such file") && strstr(file, "MANIFEST-");
  return wd_error_new(WD_ERR_IO, E_STATE_CORRUPT,
                      "the state directory %s is corrupt: %s%s (RocksDB: %s). Its rows cannot be "
                      "read; widen rebuilds them as it rebuilds a lost state directory (from the state changelog "
                      "topic, else from the sources, without repeating output) when the directory is moved aside: "
                      "start with state.on-corruption: rebuild (moves it to %s.corrupt-<time>), or move it away "
                      "yourself; keep the old one for inspection until the table is checked",
                      dir, file, named ? ", which its CURRENT file names, is missing" : " is damaged or missing", msg,
                      dir);
}

/* The marker a run leaves in a state directory whose corruption RocksDB reported while reading or
 * writing it (a damaged block is found only when read): the next open of the directory refuses it
 * with E_STATE_CORRUPT, so that state.on-corruption applies at the next start. */
#define WD_RDB_CORRUPT_MARKER "WIDEN-CORRUPT"

/* An error of a read or write of rs: E_STATE_CORRUPT (and the marker written) when RocksDB says
 * Corruption, else WD_ERR_IO eid with "<what> the state store in <dir>: <msg>". */
static wd_error_t *wd_rdb_io_error(const char *dir, wd_eid_t eid, const char *what, const char *msg) {
  if (!strstr(msg, "Corruption")) return wd_error_make(WD_ERR_IO, eid, "%s the state store in %s: %s", what, dir, msg);
  wd_error_t *err = wd_rdb_corrupt_error(dir, msg);
  char path[4096];
  snprintf(path, sizeof(path), "%s/" WD_RDB_CORRUPT_MARKER, dir);
  FILE *f = fopen(path, "w");
  if (f) {
    fprintf(f, "%s\n", msg);
    fclose(f);
  }
  return err;
}

/* E_STATE_CORRUPT when dir holds the marker of a corruption found by an earlier run. */
static wd_error_t *wd_rdb_marker_error(const char *dir) {
  char path[4096], line[2048] = "";
  snprintf(path, sizeof(path), "%s/" WD_RDB_CORRUPT_MARKER, dir);
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  if (!fgets(line, sizeof(line), f)) line[0] = 0;
  fclose(f);
  line[strcspn(line, "\n")] = 0;
  char msg[2300];
  snprintf(msg, sizeof(msg), "%s (found by an earlier run, which left %s/" WD_RDB_CORRUPT_MARKER ")",
           line[0] ? line : "Corruption", dir);
  return wd_rdb_corrupt_error(dir, msg);
}

/* True when RocksDB's open error says the directory's LOCK file is held (toolchain-notes §3). */
static int wd_rdb_is_lock_error(const char *msg) {
  return strstr(msg, "IO error") && (strstr(msg, "While lock file") || strstr(msg, "lock hold by current process"));
}

/*
 * Opens (creating if needed) the store in dir; see store.h. Retries once without compression when
 * the library lacks lz4/zstd. Errors: WD_ERR_IO "E_STORE_LOCKED" / "E_STORE_OPEN", WD_ERR_NOMEM.
 * Any thread; the store is then used by one thread at a time.
 */
/* Creates dir and its missing parents (like mkdir -p); RocksDB creates only the last level.
 * The state directory itself is created 0700 (owner only: it holds the table's rows), missing
 * parents 0755; an existing directory keeps its mode. 0, or -1 with errno set. */
static int wd_mkdir_p(const char *dir) {
  char path[4096];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof(path)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(path, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (path[i] != '/' && path[i] != 0) continue;
    char c = path[i];
    path[i] = 0;
    if (mkdir(path, c ? 0755 : 0700) != 0 && errno != EEXIST) return -1;
    path[i] = c;
  }
  return 0;
}

wd_error_t *wd_store_open_rocksdb(const char *dir, const wd_store_options_t *opts, wd_store_t **out) {
  /* RocksDB's per-thread perf counters (kEnableCount by default) are never read here; counting
   * them reaches the library's thread-local perf context on every operation (__tls_get_addr:
   * ~2 % of the engine's instructions, bench/README.md). The level is the calling thread's, so
   * this covers the thread that opens the store, the pipeline's. */
  rocksdb_set_perf_level(rocksdb_disable);
  wd_error_t *err = NULL;
  wd_store_rdb_t *rs = NULL;
  char *rerr = NULL;
  if (!dir || !out) {
    err = wd_error_new(WD_ERR_INTERNAL, E_STORE_OPEN, "open_rocksdb: NULL argument");
    goto cleanup;
  }
  *out = NULL;
  rs = calloc(1, sizeof(*rs));
  if (!rs || !(rs->dir = strdup(dir))) {
    err = wd_error_new(WD_ERR_NOMEM, E_STORE_OPEN, "out of memory opening the store in %s", dir);
    goto cleanup;
  }
  if (wd_mkdir_p(dir) != 0) {
    err = wd_error_new(WD_ERR_IO, E_STORE_OPEN,
                       "cannot create the state directory %s: %s; check the path of "
                       "state.dir and its permissions",
                       dir, strerror(errno));
    goto cleanup;
  }
  if (opts && opts->tombstone_retention_ms >= 0) {
    rs->retention.retention_ms = (uint64_t)opts->tombstone_retention_ms;
    rs->filter =
        rocksdb_compactionfilter_create(&rs->retention, wd_rdb_filter_destructor, wd_rdb_filter, wd_rdb_filter_name);
  }
  if ((err = wd_rdb_marker_error(dir))) goto cleanup;
  for (int compress = 1; compress >= 0; compress--) {
    wd_rdb_build_options(rs, opts, compress);
    rocksdb_free(rerr);
    rerr = NULL;
    rs->db = rocksdb_open_column_families(rs->db_opts, dir, WD_CF_COUNT, wd_rdb_cf_names,
                                          (const rocksdb_options_t *const *)rs->cf_opts, rs->cf, &rerr);
    if (rs->db || !rerr || !strstr(rerr, "not linked with the binary")) break;
  }
  if (!rs->db) {
    const char *msg = rerr ? rerr : "unknown error";
    if (wd_rdb_is_lock_error(msg)) {
      err = wd_error_new(WD_ERR_IO, E_STORE_LOCKED,
                         "state directory %s is locked: another widen process is using it; stop that process "
                         "or choose another state directory (RocksDB: %s)",
                         dir, msg);
    } else if (wd_rdb_is_corruption(msg, dir)) {
      err = wd_rdb_corrupt_error(dir, msg);
    } else {
      err = wd_error_new(WD_ERR_IO, E_STORE_OPEN, "cannot open the state store in %s: %s", dir, msg);
    }
    goto cleanup;
  }
  rs->min_free_bytes = opts ? opts->min_free_bytes : 0;
  if (rs->min_free_bytes) {
    if (!atomic_load(&wd_rdb_disk_dir_set) && strlen(dir) < sizeof(wd_rdb_disk_dir)) {
      strcpy(wd_rdb_disk_dir, dir);
      wd_rdb_disk_min = rs->min_free_bytes;
      atomic_store_explicit(&wd_rdb_disk_dir_set, true, memory_order_release);
    }
    int64_t free_b = wd_store_disk_measure(dir);
    atomic_store(&wd_rdb_disk_free, free_b);
    atomic_store(&wd_rdb_disk_is_short, free_b >= 0 && (uint64_t)free_b < rs->min_free_bytes);
  }
  rs->wopts = rocksdb_writeoptions_create();
  rocksdb_writeoptions_set_sync(rs->wopts, opts && opts->sync ? 1 : 0);
  rs->wopts_sync = rocksdb_writeoptions_create();
  rocksdb_writeoptions_set_sync(rs->wopts_sync, 1);
  rs->ropts = rocksdb_readoptions_create();
  rs->scan_ropts = rocksdb_readoptions_create();
  rocksdb_readoptions_set_fill_cache(rs->scan_ropts, 0);
  rs->wb = rocksdb_writebatch_create();
  rs->base.ops = &wd_store_rdb_ops;
  *out = &rs->base;
  rs = NULL;
cleanup:
  rocksdb_free(rerr);
  wd_rdb_free(rs);
  return err;
}

/*
 * Opens dir read-only as a RocksDB secondary instance (rocksdb_open_as_secondary_column_families,
 * then rocksdb_try_catch_up_with_primary), which needs no lock: the view of the primary's data at
 * the catch-up. The secondary's own info logs go to a fresh directory under $TMPDIR (or /tmp),
 * removed at close. See store.h. Errors: WD_ERR_IO "E_STORE_OPEN", WD_ERR_NOMEM.
 */
wd_error_t *wd_store_open_rocksdb_secondary(const char *dir, wd_store_t **out) {
  wd_error_t *err = NULL;
  wd_store_rdb_t *rs = NULL;
  char *rerr = NULL;
  char tmpl[4096];
  struct stat sb;
  if (!dir || !out) return wd_error_new(WD_ERR_INTERNAL, E_STORE_OPEN, "open_rocksdb_secondary: NULL argument");
  *out = NULL;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return wd_error_new(WD_ERR_IO, E_STORE_OPEN, "state directory %s does not exist", dir);
  if ((err = wd_rdb_marker_error(dir))) return err;
  const char *tmp = getenv("TMPDIR");
  snprintf(tmpl, sizeof(tmpl), "%s/widen-secondary-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  rs = calloc(1, sizeof(*rs));
  if (!rs || !(rs->dir = strdup(dir))) {
    err = wd_error_new(WD_ERR_NOMEM, E_STORE_OPEN, "out of memory opening the store in %s", dir);
    goto cleanup;
  }
  if (!mkdtemp(tmpl) || !(rs->secondary = strdup(tmpl))) {
    err = wd_error_new(WD_ERR_IO, E_STORE_OPEN, "cannot create a directory for the secondary instance of %s: %s", dir,
                       strerror(errno));
    goto cleanup;
  }
  wd_rdb_build_options(rs, NULL, 1);
  rocksdb_options_set_max_open_files(rs->db_opts, -1); /* required of a secondary instance */
  rocksdb_options_set_create_if_missing(rs->db_opts, 0);
  rs->db = rocksdb_open_as_secondary_column_families(rs->db_opts, dir, rs->secondary, WD_CF_COUNT, wd_rdb_cf_names,
                                                     (const rocksdb_options_t *const *)rs->cf_opts, rs->cf, &rerr);
  if (!rs->db) {
    if (rerr && wd_rdb_is_corruption(rerr, dir)) err = wd_rdb_corrupt_error(dir, rerr);
    else
      err = wd_error_new(WD_ERR_IO, E_STORE_OPEN, "cannot open the state store in %s read-only: %s", dir,
                         rerr ? rerr : "unknown error");
    goto cleanup;
  }
  rocksdb_try_catch_up_with_primary(rs->db, &rerr);
  if (rerr) {
    err = wd_error_new(WD_ERR_IO, E_STORE_OPEN, "catching up with the state store in %s: %s", dir, rerr);
    goto cleanup;
  }
  rs->ropts = rocksdb_readoptions_create();
  rs->scan_ropts = rocksdb_readoptions_create();
  rocksdb_readoptions_set_fill_cache(rs->scan_ropts, 0);
  rs->base.ops = &wd_store_rdb_ops;
  *out = &rs->base;
  rs = NULL;
cleanup:
  rocksdb_free(rerr);
  wd_rdb_free(rs);
  return err;
}

/*
 * Grows the multi_get scratch arrays to hold n entries. Returns 0, or -1 on no memory.
 */
static int wd_rdb_scratch(wd_store_rdb_t *rs, size_t n) {
  if (n <= rs->scratch_cap) return 0;
  rocksdb_pinnableslice_t **pins = realloc(rs->pins, n * sizeof(*pins));
  if (!pins) return -1;
  rs->pins = pins;
  char **errs = realloc(rs->errs, n * sizeof(*errs));
  if (!errs) return -1;
  rs->errs = errs;
  rs->scratch_cap = n;
  return 0;
}

/* Whether keys[0..n) are in the bytewise order of the "state" column family's comparator (equal
 * keys allowed): then MultiGet is told so and does not sort them itself. */
static bool wd_rdb_keys_sorted(size_t n, const uint8_t *const *keys, const size_t *klens) {
  for (size_t i = 1; i < n; i++) {
    size_t m = klens[i - 1] < klens[i] ? klens[i - 1] : klens[i];
    int c = m ? memcmp(keys[i - 1], keys[i], m) : 0;
    if (c > 0 || (c == 0 && klens[i - 1] > klens[i])) return false;
  }
  return true;
}

/*
 * The multi_get callback: one batched MultiGet on "state" with pinnable slices, whose values
 * are copied into malloc'd buffers. Errors: WD_ERR_IO "E_STORE_READ" with the first RocksDB error
 * (then no value is returned), WD_ERR_NOMEM. The thread that uses st.
 */
static wd_error_t *wd_rdb_multi_get(wd_store_t *st, size_t n, const uint8_t *const *keys, const size_t *klens,
                                    uint8_t **vals, size_t *vlens) {
  wd_store_rdb_t *rs = (wd_store_rdb_t *)st;
  wd_error_t *err = NULL;
  size_t done = 0;
  if (wd_rdb_scratch(rs, n)) {
    err = wd_error_new(WD_ERR_NOMEM, E_STORE_READ, "out of memory reading %zu keys", n);
    goto cleanup;
  }
  rocksdb_batched_multi_get_cf(rs->db, rs->ropts, rs->cf[WD_CF_STATE], n, (const char *const *)keys, klens, rs->pins,
                               rs->errs, wd_rdb_keys_sorted(n, keys, klens));
  done = n;
  for (size_t i = 0; i < n; i++) {
    if (rs->errs[i]) {
      if (!err) err = wd_rdb_io_error(rs->dir, WD_EID_E_STORE_READ, "reading", rs->errs[i]);
      continue;
    }
    if (!rs->pins[i] || err) continue;
    size_t len = 0;
    const char *p = rocksdb_pinnableslice_value(rs->pins[i], &len);
    vals[i] = malloc(len ? len : 1);
    if (!vals[i]) {
      err = wd_error_new(WD_ERR_NOMEM, E_STORE_READ, "out of memory copying %zu values", n);
      continue;
    }
    if (len) memcpy(vals[i], p, len);
    vlens[i] = len;
  }
cleanup:
  for (size_t i = 0; i < done; i++) {
    rocksdb_pinnableslice_destroy(rs->pins[i]);
    rocksdb_free(rs->errs[i]);
    if (err) {
      free(vals[i]);
      vals[i] = NULL;
      vlens[i] = 0;
    }
  }
  return err;
}

/*
 * The multi_get_each callback: one batched MultiGet on "state" with pinnable slices, each value
 * handed to cb where RocksDB pinned it (no copy). Errors: WD_ERR_IO "E_STORE_READ" with the first
 * RocksDB error (then cb is not called), WD_ERR_NOMEM, or cb's error. The thread that uses st.
 */
static wd_error_t *wd_rdb_multi_get_each(wd_store_t *st, size_t n, const uint8_t *const *keys, const size_t *klens,
                                         wd_store_value_cb cb, void *ctx) {
  wd_store_rdb_t *rs = (wd_store_rdb_t *)st;
  wd_error_t *err = NULL;
  if (wd_rdb_scratch(rs, n)) return wd_error_new(WD_ERR_NOMEM, E_STORE_READ, "out of memory reading %zu keys", n);
  rocksdb_batched_multi_get_cf(rs->db, rs->ropts, rs->cf[WD_CF_STATE], n, (const char *const *)keys, klens, rs->pins,
                               rs->errs, wd_rdb_keys_sorted(n, keys, klens));
  for (size_t i = 0; i < n && !err; i++)
    if (rs->errs[i]) err = wd_rdb_io_error(rs->dir, WD_EID_E_STORE_READ, "reading", rs->errs[i]);
  for (size_t i = 0; i < n && !err; i++) {
    size_t len = 0;
    const char *p = rs->pins[i] ? rocksdb_pinnableslice_value(rs->pins[i], &len) : NULL;
    err = cb(ctx, i, (const uint8_t *)p, p ? len : 0);
  }
  for (size_t i = 0; i < n; i++) {
    rocksdb_pinnableslice_destroy(rs->pins[i]);
    rocksdb_free(rs->errs[i]);
  }
  return err;
}

/*
 * The meta_get callback: a pinned point lookup on "meta", copied into *val (NULL when absent).
 * Errors: WD_ERR_IO "E_STORE_READ", WD_ERR_NOMEM.
 */
static wd_error_t *wd_rdb_meta_get(wd_store_t *st, const uint8_t *key, size_t klen, uint8_t **val, size_t *vlen) {
  wd_store_rdb_t *rs = (wd_store_rdb_t *)st;
  wd_error_t *err = NULL;
  char *rerr = NULL;
  rocksdb_pinnableslice_t *pin =
      rocksdb_get_pinned_cf(rs->db, rs->ropts, rs->cf[WD_CF_META], (const char *)key, klen, &rerr);
  *val = NULL;
  *vlen = 0;
  if (rerr) {
    err = wd_rdb_io_error(rs->dir, WD_EID_E_STORE_READ, "reading an offset from", rerr);
    goto cleanup;
  }
  if (!pin) goto cleanup;
  size_t len = 0;
  const char *p = rocksdb_pinnableslice_value(pin, &len);
  *val = malloc(len ? len : 1);
  if (!*val) {
    err = wd_error_new(WD_ERR_NOMEM, E_STORE_READ, "out of memory reading an offset");
    goto cleanup;
  }
  if (len) memcpy(*val, p, len);
  *vlen = len;
cleanup:
  rocksdb_pinnableslice_destroy(pin);
  rocksdb_free(rerr);
  return err;
}

/*
 * The write callback: the batches' ops, in order, into one rocksdb_writebatch_t ("state" puts and
 * deletes, "meta" puts) and one rocksdb_write (fsync'd when opened with sync). Errors: WD_ERR_IO
 * "E_STORE_WRITE" (nothing applied). The thread that uses st.
 */
static wd_error_t *wd_rdb_write(wd_store_t *st, const wd_store_batch_t *const *bs, size_t nb, bool sync) {
  wd_store_rdb_t *rs = (wd_store_rdb_t *)st;
  wd_error_t *err = NULL;
  char *rerr = NULL;
  wd_store_op_view_t v;
  if (rs->secondary)
    return wd_error_new(WD_ERR_IO, E_STORE_WRITE, "the state store in %s is open read-only (secondary instance)",
                        rs->dir);
  if ((err = wd_rdb_disk_check(rs))) return err;
  rocksdb_writebatch_clear(rs->wb);
  for (size_t k = 0; k < nb; k++) { /* the batches in order, in one write */
    for (size_t i = 0; i < bs[k]->n; i++) {
      wd_store_batch_view(bs[k], i, &v);
      switch (v.kind) {
      case WD_STORE_OP_PUT:
        rocksdb_writebatch_put_cf(rs->wb, rs->cf[WD_CF_STATE], (const char *)v.key, v.klen, (const char *)v.val,
                                  v.vlen);
        break;
      case WD_STORE_OP_DELETE:
        rocksdb_writebatch_delete_cf(rs->wb, rs->cf[WD_CF_STATE], (const char *)v.key, v.klen);
        break;
      case WD_STORE_OP_META_PUT:
        rocksdb_writebatch_put_cf(rs->wb, rs->cf[WD_CF_META], (const char *)v.key, v.klen, (const char *)v.val, v.vlen);
        break;
      case WD_STORE_OP_META_DELETE:
        rocksdb_writebatch_delete_cf(rs->wb, rs->cf[WD_CF_META], (const char *)v.key, v.klen);
        break;
      case WD_STORE_OP_DELETE_RANGE:
        if (v.klen > WD_STORE_RANGE_BEGIN_MAX) { /* store.h: never in the insert hints' domain */
          rocksdb_writebatch_clear(rs->wb);
          return wd_error_new(
              WD_ERR_INTERNAL, E_STORE_WRITE,
              "writing to the state store in %s: a range deletion's begin key of %zu bytes (at most %d)", rs->dir,
              v.klen, WD_STORE_RANGE_BEGIN_MAX);
        }
        rocksdb_writebatch_delete_range_cf(rs->wb, rs->cf[WD_CF_STATE], (const char *)v.key, v.klen,
                                           (const char *)v.val, v.vlen);
        break;
      case WD_STORE_OP_META_DELETE_RANGE:
        rocksdb_writebatch_delete_range_cf(rs->wb, rs->cf[WD_CF_META], (const char *)v.key, v.klen, (const char *)v.val,
                                           v.vlen);
        break;
      }
    }
  }
  rocksdb_write(rs->db, sync ? rs->wopts_sync : rs->wopts, rs->wb, &rerr);
  if (rerr) err = wd_rdb_io_error(rs->dir, WD_EID_E_STORE_WRITE, "writing to", rerr);
  rocksdb_writebatch_clear(rs->wb);
  rocksdb_free(rerr);
  return err;
}

/*
 * The scan callback: an iterator over "state" in key order (not filling the block cache) until
 * cb returns non-zero. Errors: WD_ERR_IO "E_STORE_READ" from the iterator. The thread that uses st.
 */
static wd_error_t *wd_rdb_scan(wd_store_t *st, wd_store_scan_cb cb, void *ctx) {
  wd_store_rdb_t *rs = (wd_store_rdb_t *)st;
  wd_error_t *err = NULL;
  char *rerr = NULL;
  rocksdb_iterator_t *it = rocksdb_create_iterator_cf(rs->db, rs->scan_ropts, rs->cf[WD_CF_STATE]);
  for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
    size_t klen = 0, vlen = 0;
    const char *k = rocksdb_iter_key(it, &klen);
    const char *v = rocksdb_iter_value(it, &vlen);
    if (cb(ctx, (const uint8_t *)k, klen, (const uint8_t *)v, vlen)) goto cleanup;
  }
  rocksdb_iter_get_error(it, &rerr);
  if (rerr) err = wd_rdb_io_error(rs->dir, WD_EID_E_STORE_READ, "scanning", rerr);
cleanup:
  rocksdb_iter_destroy(it);
  rocksdb_free(rerr);
  return err;
}

/*
 * The scan_prefix callback: an iterator seeked to prefix, in key order while keys start with it.
 * Errors: WD_ERR_IO "E_STORE_READ". The thread that uses st.
 */
static wd_error_t *wd_rdb_scan_prefix(wd_store_t *st, const uint8_t *prefix, size_t plen, const uint8_t *from,
                                      size_t flen, wd_store_scan_cb cb, void *ctx) {
  wd_store_rdb_t *rs = (wd_store_rdb_t *)st;
  wd_error_t *err = NULL;
  char *rerr = NULL;
  /* an upper bound (the prefix plus one) stops the iterator at the prefix's end instead of skipping
   * the deletes after it until the next live key */
  char *upper = malloc(plen + 1);
  size_t ulen = plen;
  if (!upper) return wd_error_new(WD_ERR_NOMEM, E_STORE_READ, "scanning the state store: out of memory");
  memcpy(upper, prefix, plen);
  while (ulen && (uint8_t)upper[ulen - 1] == 0xFF) ulen--;
  if (ulen) upper[ulen - 1] = (char)((uint8_t)upper[ulen - 1] + 1);
  rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
  if (ulen) rocksdb_readoptions_set_iterate_upper_bound(ro, upper, ulen);
  rocksdb_iterator_t *it = rocksdb_create_iterator_cf(rs->db, ro, rs->cf[WD_CF_STATE]);
  /* from the later of the prefix and `from` */
  bool later = from && (memcmp(from, prefix, flen < plen ? flen : plen) > 0 ||
                        (memcmp(from, prefix, flen < plen ? flen : plen) == 0 && flen > plen));
  const char *seek = later ? (const char *)from : (const char *)prefix;
  size_t slen = later ? flen : plen;
  for (rocksdb_iter_seek(it, seek, slen); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
    size_t klen = 0, vlen = 0;
    const char *k = rocksdb_iter_key(it, &klen);
    if (klen < plen || (plen && memcmp(k, prefix, plen) != 0)) break;
    const char *v = rocksdb_iter_value(it, &vlen);
    if (cb(ctx, (const uint8_t *)k, klen, (const uint8_t *)v, vlen)) goto cleanup;
  }
  rocksdb_iter_get_error(it, &rerr);
  if (rerr) err = wd_rdb_io_error(rs->dir, WD_EID_E_STORE_READ, "scanning", rerr);
cleanup:
  rocksdb_iter_destroy(it);
  rocksdb_readoptions_destroy(ro);
  free(upper);
  rocksdb_free(rerr);
  return err;
}

/*
 * The compact callback: a full manual compaction of "state" then "meta" (it flushes the memtables
 * first and, with a compaction filter set, includes the bottommost level), then checks
 * rocksdb.background-errors. Blocks. Errors: WD_ERR_IO "E_STORE_WRITE".
 */
static wd_error_t *wd_rdb_compact(wd_store_t *st) {
  wd_store_rdb_t *rs = (wd_store_rdb_t *)st;
  uint64_t bg_errors = 0;
  if (rs->secondary)
    return wd_error_new(WD_ERR_IO, E_STORE_WRITE, "the state store in %s is open read-only (secondary instance)",
                        rs->dir);
  rocksdb_compact_range_cf(rs->db, rs->cf[WD_CF_STATE], NULL, 0, NULL, 0);
  rocksdb_compact_range_cf(rs->db, rs->cf[WD_CF_META], NULL, 0, NULL, 0);
  if (rocksdb_property_int(rs->db, "rocksdb.background-errors", &bg_errors) == 0 && bg_errors > 0)
    return wd_error_new(WD_ERR_IO, E_STORE_WRITE, "compacting the state store in %s: %llu background errors", rs->dir,
                        (unsigned long long)bg_errors);
  return NULL;
}

/*
 * The disk_bytes callback: per column family, live SST bytes plus the memtables' size (which
 * stands in for the unflushed WAL).
 */
static uint64_t wd_rdb_disk_bytes(wd_store_t *st) {
  wd_store_rdb_t *rs = (wd_store_rdb_t *)st;
  uint64_t total = 0;
  for (int i = 0; i < WD_CF_COUNT; i++) {
    uint64_t v = 0;
    if (rocksdb_property_int_cf(rs->db, rs->cf[i], "rocksdb.total-sst-files-size", &v) == 0) total += v;
    v = 0;
    if (rocksdb_property_int_cf(rs->db, rs->cf[i], "rocksdb.cur-size-all-mem-tables", &v) == 0) total += v;
  }
  return total;
}

static void wd_rdb_close(wd_store_t *st) { wd_rdb_free((wd_store_rdb_t *)st); }

static const wd_store_ops_t wd_store_rdb_ops = {
    .name = "rocksdb",
    .multi_get = wd_rdb_multi_get,
    .multi_get_each = wd_rdb_multi_get_each,
    .write = wd_rdb_write,
    .meta_get = wd_rdb_meta_get,
    .scan = wd_rdb_scan,
    .scan_prefix = wd_rdb_scan_prefix,
    .compact = wd_rdb_compact,
    .disk_bytes = wd_rdb_disk_bytes,
    .close = wd_rdb_close,
};

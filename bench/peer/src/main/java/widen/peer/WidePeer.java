/*
 * bench/peer — the peer of bench/run-peer: the wide table of configs/demo.yaml (what bench/e2e
 * builds) as a Kafka Streams 4.1 application, so that widen and Kafka Streams can be measured side
 * by side on the same broker and the same input topics.
 *
 *   java -cp target/classes:target/lib/* widen.peer.WidePeer --bootstrap 127.0.0.1:9592
 *       --application-id APP --input-prefix PREFIX --output TOPIC --state-dir DIR
 *       --guarantee exactly_once_v2|at_least_once [--commit-interval-ms N] [--max-idle-ms 1500]
 *       [--repartition orders,payments,shipments] [--ready-file PATH] [--linger-ms 5] [--expect-records N]
 *
 * What it computes (merge-semantics.md, sections 1.2, 7.2, 7.3, 10, 10.1; the options of demo.yaml):
 *   - sources PREFIX+orders|payments|shipments, Debezium JSON (schemas.enable=false or a
 *     {"schema","payload"} envelope): op c/r -> +I(after), u -> -U(before) +U(after), d -> -D(before),
 *     the columns mapped as demo.yaml maps them (ordered_at <- order_ts, paid_amount <- pay_amount, ...);
 *   - table orders_wide, primary key order_id, merge-engine partial-update with one sequence group per
 *     stream (order_version, pay_version, ship_version); a retraction with a newer-or-equal group
 *     sequence clears its group; a removal (only retractions for an absent key) leaves a tombstone of
 *     the key and the sequence columns (D7);
 *   - changelog-producer lookup with row-deduplicate: per source message, the key's row before (B)
 *     and after (A): +I(A), -U(B) +U(A) unless equal, -D(B);
 *   - output: changelog-json, one record per row kind, key {"order_id":N}, value
 *     {"op":"+U","table":"orders_wide","ts_ms":<wall ms>,"row":{...every column...}}, the same bytes
 *     widen's changelog-json encoder writes, with the record timestamp = the wall clock at processing.
 * The state is a persistent (RocksDB) key-value store with its changelog topic (Kafka Streams'
 * default), keyed by the output key bytes. A source listed in --repartition is read as if keyed by
 * another id: its records are re-keyed by the value's order_id and go through a repartition topic
 * (KStream#selectKey + #repartition); the others are co-partitioned with the table (their key is the
 * table key) and read directly, as widen reads them.
 *
 * Exit: after the first input record (after --expect-records of them when given: a stall of the
 * stream thread on a loaded machine must not end a run early), once no input record arrived for
 * --max-idle-ms, the streams
 * are closed (committing the last transaction) and one line is printed on stdout:
 *   PEER records=N cpu_s=... cpu_first_s=... cpu_idle_s=... wall_s=...
 * (process CPU from the JVM at exit, at the first input record and when the idle wait began; wall from the first
 * to the last input record). Exit status 0, or 1 when the streams went to ERROR.
 */
package widen.peer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

public final class WidePeer {
  static final String TABLE = "orders_wide";
  static final String STORE = "orders-wide-state";
  static final String[] STREAMS = {"orders", "payments", "shipments"};

  /* The table's columns (demo.yaml), their types and sequence groups. */
  static final String[] COLS = {"order_id", "customer", "amount", "currency", "ordered_at", "order_version",
      "paid_amount", "pay_method", "pay_status", "paid_at", "pay_version",
      "carrier", "ship_status", "shipped_at", "ship_version"};
  static final int BIGINT = 0, STRING = 1, DECIMAL_10_2 = 2, TIMESTAMP_3 = 3;
  static final int[] TYPES = {BIGINT, STRING, DECIMAL_10_2, STRING, TIMESTAMP_3, BIGINT,
      DECIMAL_10_2, STRING, STRING, TIMESTAMP_3, BIGINT,
      STRING, STRING, TIMESTAMP_3, BIGINT};
  static final int NCOLS = COLS.length;
  static final int[] SEQ = {5, 10, 14};
  static final int[][] PROTECTED = {{1, 2, 3, 4}, {6, 7, 8, 9}, {11, 12, 13}};
  /* Per stream: source field -> table column (demo.yaml's sources[].columns). */
  static final String[][] SRC_FIELDS = {
      {"order_id", "customer", "amount", "currency", "order_ts", "order_version"},
      {"order_id", "pay_amount", "pay_method", "pay_status", "pay_ts", "pay_version"},
      {"order_id", "carrier", "ship_status", "ship_ts", "ship_version"}};
  static final int[][] SRC_COLS = {{0, 1, 2, 3, 4, 5}, {0, 6, 7, 8, 9, 10}, {0, 11, 12, 13, 14}};

  static final ObjectMapper MAPPER = new ObjectMapper();
  static final DateTimeFormatter TS_FMT = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS");

  /* Row kinds. */
  static final int INSERT = 0, UPDATE_BEFORE = 1, UPDATE_AFTER = 2, DELETE = 3;
  static final String[] KIND_TEXT = {"+I", "-U", "+U", "-D"};

  static boolean isAdd(int kind) {
    return kind == INSERT || kind == UPDATE_AFTER;
  }

  /* A change record: a row kind and a full-width row (columns the stream does not map are null). */
  record Change(int kind, Object[] row) {}

  /* What the store holds for a key: a row, or a tombstone (key and sequence columns only). */
  record Entry(boolean tombstone, Object[] row) {}

  static final AtomicLong RECORDS = new AtomicLong();
  static volatile long firstNanos, lastNanos, firstCpuNanos, lastCpuNanos;

  static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }

  /* ---- decoding ---------------------------------------------------------------------------- */

  static Object column(JsonNode v, int type) {
    if (v == null || v.isNull()) return null;
    switch (type) {
      case BIGINT:
      case TIMESTAMP_3:
        return v.isNumber() ? v.longValue() : Long.parseLong(v.asText().trim());
      case DECIMAL_10_2:
        return new BigDecimal(v.asText()).setScale(2, RoundingMode.HALF_UP).toPlainString();
      default:
        return v.isTextual() ? v.textValue() : v.toString();
    }
  }

  static Object[] image(JsonNode img, int stream) {
    Object[] row = new Object[NCOLS];
    String[] f = SRC_FIELDS[stream];
    int[] c = SRC_COLS[stream];
    for (int i = 0; i < f.length; i++) row[c[i]] = column(img.get(f[i]), TYPES[c[i]]);
    return row;
  }

  static JsonNode envelope(byte[] value) throws IOException {
    JsonNode root = MAPPER.readTree(value);
    if (root != null && root.has("payload") && root.has("schema")) root = root.get("payload");
    return root;
  }

  /* The change records of one Debezium JSON message of `stream` (none for a tombstone value). */
  static List<Change> decode(byte[] value, int stream) throws IOException {
    List<Change> out = new ArrayList<>(2);
    if (value == null || value.length == 0) return out;
    JsonNode root = envelope(value);
    if (root == null || !root.isObject()) throw new IOException("not a JSON object");
    String op = root.path("op").asText();
    JsonNode before = root.get("before"), after = root.get("after");
    switch (op) {
      case "c":
      case "r":
        out.add(new Change(INSERT, image(after, stream)));
        break;
      case "u":
        if (before != null && !before.isNull()) out.add(new Change(UPDATE_BEFORE, image(before, stream)));
        out.add(new Change(UPDATE_AFTER, image(after, stream)));
        break;
      case "d":
        out.add(new Change(DELETE, image(before, stream)));
        break;
      default:
        throw new IOException("unknown op '" + op + "'");
    }
    return out;
  }

  /* The table key of a message of `stream` (a re-keyed stream): {"order_id":N} from its image. */
  static Bytes keyOf(byte[] value, int stream) {
    try {
      JsonNode root = envelope(value);
      JsonNode img = root.get("after");
      if (img == null || img.isNull()) img = root.get("before");
      return Bytes.wrap(keyBytes((Long) column(img.get("order_id"), BIGINT)));
    } catch (Exception e) {
      return null;
    }
  }

  static byte[] keyBytes(Long id) {
    return ("{\"order_id\":" + id + "}").getBytes(StandardCharsets.UTF_8);
  }

  /* ---- the merge (merge-semantics.md 1.2, 7.2, 7.3; D7, D8) ---------------------------------- */

  @SuppressWarnings("unchecked")
  static int cmp(Object a, Object b) {
    return ((Comparable<Object>) a).compareTo(b);
  }

  /* Merges one change record with what the key holds (null: absent). Returns the new entry. */
  static Entry mergeOne(Entry stored, Change r) {
    Object[] w = new Object[NCOLS];
    boolean insertSeen = false, first = true;
    for (int step = stored == null ? 1 : 0; step < 2; step++) {
      boolean add;
      Object[] x;
      if (step == 0) {
        add = !stored.tombstone; /* a stored row enters as +I, a tombstone as a retraction */
        x = stored.row;
      } else {
        add = isAdd(r.kind);
        x = r.row;
      }
      if (first) {
        w[0] = x[0];
        if (!add) /* a retraction first in merge order brings only its key and ordering columns */
          for (int s : SEQ) w[s] = x[s];
      }
      for (int g = 0; g < SEQ.length; g++) {
        Object seq = x[SEQ[g]];
        if (seq == null) continue; /* an empty group is skipped */
        Object ws = w[SEQ[g]];
        if (ws != null && cmp(seq, ws) < 0) continue; /* older: no aggregates here, nothing changes */
        for (int f : PROTECTED[g]) w[f] = add ? x[f] : null;
        w[SEQ[g]] = seq;
      }
      if (add) insertSeen = true;
      first = false;
    }
    return new Entry(!insertSeen, w); /* no add record applied: a removal, leaving a tombstone */
  }

  /* ---- the stored entry's bytes -------------------------------------------------------------- */

  static byte[] encodeEntry(Entry e) {
    int n = 1 + NCOLS;
    byte[][] text = new byte[NCOLS][];
    for (int i = 0; i < NCOLS; i++) {
      Object v = e.row[i];
      if (v == null) continue;
      if (v instanceof Long) n += 8;
      else {
        text[i] = ((String) v).getBytes(StandardCharsets.UTF_8);
        n += 4 + text[i].length;
      }
    }
    java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(n);
    b.put((byte) (e.tombstone ? 1 : 0));
    for (int i = 0; i < NCOLS; i++) {
      Object v = e.row[i];
      if (v == null) b.put((byte) 0);
      else if (v instanceof Long) b.put((byte) 1).putLong((Long) v);
      else b.put((byte) 2).putInt(text[i].length).put(text[i]);
    }
    return b.array();
  }

  static Entry decodeEntry(byte[] bytes) {
    if (bytes == null) return null;
    java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(bytes);
    boolean tomb = b.get() != 0;
    Object[] row = new Object[NCOLS];
    for (int i = 0; i < NCOLS; i++) {
      byte t = b.get();
      if (t == 1) row[i] = b.getLong();
      else if (t == 2) {
        byte[] s = new byte[b.getInt()];
        b.get(s);
        row[i] = new String(s, StandardCharsets.UTF_8);
      }
    }
    return new Entry(tomb, row);
  }

  /* ---- changelog-json (changelog/encode_json.c) ---------------------------------------------- */

  static void putString(StringBuilder sb, String s) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') sb.append('\\').append(c);
      else if (c < 0x20) {
        switch (c) {
          case '\n': sb.append("\\n"); break;
          case '\r': sb.append("\\r"); break;
          case '\t': sb.append("\\t"); break;
          case '\b': sb.append("\\b"); break;
          case '\f': sb.append("\\f"); break;
          default: sb.append(String.format("\\u%04x", (int) c));
        }
      } else sb.append(c);
    }
    sb.append('"');
  }

  static byte[] changelogJson(int kind, Object[] row, long tsMs) {
    StringBuilder sb = new StringBuilder(320);
    sb.append("{\"op\":\"").append(KIND_TEXT[kind]).append("\",\"table\":\"").append(TABLE)
        .append("\",\"ts_ms\":").append(tsMs).append(",\"row\":");
    for (int i = 0; i < NCOLS; i++) {
      sb.append(i == 0 ? "{\"" : ",\"").append(COLS[i]).append("\":");
      Object v = row[i];
      if (v == null) sb.append("null");
      else if (TYPES[i] == TIMESTAMP_3) {
        long ms = (Long) v;
        LocalDateTime t = LocalDateTime.ofEpochSecond(Math.floorDiv(ms, 1000L),
            (int) Math.floorMod(ms, 1000L) * 1_000_000, ZoneOffset.UTC);
        sb.append('"').append(TS_FMT.format(t)).append('"');
      } else if (TYPES[i] == BIGINT) sb.append((long) (Long) v);
      else putString(sb, (String) v);
    }
    sb.append("}}");
    return sb.toString().getBytes(StandardCharsets.UTF_8);
  }

  /* ---- the processor ------------------------------------------------------------------------- */

  static final class WideProcessor implements Processor<Bytes, byte[], Bytes, byte[]> {
    private final Map<String, Integer> streamOfTopic;
    private ProcessorContext<Bytes, byte[]> ctx;
    private KeyValueStore<Bytes, byte[]> store;

    WideProcessor(Map<String, Integer> streamOfTopic) {
      this.streamOfTopic = streamOfTopic;
    }

    @Override
    public void init(ProcessorContext<Bytes, byte[]> context) {
      ctx = context;
      store = context.getStateStore(STORE);
    }

    @Override
    public void process(Record<Bytes, byte[]> rec) {
      long n = RECORDS.incrementAndGet();
      long now = System.nanoTime();
      if (n == 1) {
        firstNanos = now;
        firstCpuNanos = processCpuNanos();
      }
      lastNanos = now;
      String topic = ctx.recordMetadata().map(RecordMetadata::topic).orElse("");
      Integer stream = streamOfTopic.get(topic);
      if (stream == null) throw new IllegalStateException("record of an unknown topic " + topic);
      List<Change> changes;
      try {
        changes = decode(rec.value(), stream);
      } catch (Exception e) {
        RecordMetadata m = ctx.recordMetadata().get();
        System.err.printf("peer: %s[%d]@%d: not a Debezium JSON event (%s); skipped%n", m.topic(), m.partition(),
            m.offset(), e.getMessage());
        return;
      }
      if (changes.isEmpty()) return;
      Long id = (Long) changes.get(0).row[0];
      if (id == null) {
        RecordMetadata m = ctx.recordMetadata().get();
        System.err.printf("peer: %s[%d]@%d: no order_id; skipped%n", m.topic(), m.partition(), m.offset());
        return;
      }
      Bytes key = Bytes.wrap(keyBytes(id));
      Entry before = decodeEntry(store.get(key));
      Entry cur = before;
      for (Change c : changes) cur = mergeOne(cur, c);
      store.put(key, encodeEntry(cur));
      Object[] b = before == null || before.tombstone ? null : before.row;
      Object[] a = cur.tombstone ? null : cur.row;
      long ts = System.currentTimeMillis();
      if (b == null && a != null) {
        ctx.forward(new Record<>(key, changelogJson(INSERT, a, ts), ts));
      } else if (b != null && a != null) {
        if (!Arrays.equals(b, a)) { /* changelog-producer.row-deduplicate */
          ctx.forward(new Record<>(key, changelogJson(UPDATE_BEFORE, b, ts), ts));
          ctx.forward(new Record<>(key, changelogJson(UPDATE_AFTER, a, ts), ts));
        }
      } else if (b != null) {
        ctx.forward(new Record<>(key, changelogJson(DELETE, b, ts), ts));
      }
    }
  }

  /* ---- main ---------------------------------------------------------------------------------- */

  public static void main(String[] argv) throws Exception {
    Map<String, String> a = new HashMap<>();
    for (int i = 0; i + 1 < argv.length; i += 2) {
      if (!argv[i].startsWith("--")) throw new IllegalArgumentException("bad argument " + argv[i]);
      a.put(argv[i].substring(2), argv[i + 1]);
    }
    for (String req : new String[] {"bootstrap", "application-id", "input-prefix", "output", "state-dir", "guarantee"})
      if (!a.containsKey(req)) {
        System.err.println("peer: --" + req + " is required (see WidePeer.java)");
        System.exit(2);
      }
    String prefix = a.get("input-prefix");
    String appId = a.get("application-id");
    long maxIdleMs = Long.parseLong(a.getOrDefault("max-idle-ms", "1500"));
    long expect = Long.parseLong(a.getOrDefault("expect-records", "0"));
    Set<String> rekeyed = new HashSet<>();
    if (a.containsKey("repartition") && !a.get("repartition").isEmpty())
      rekeyed.addAll(Arrays.asList(a.get("repartition").split(",")));

    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
    p.put(StreamsConfig.STATE_DIR_CONFIG, a.get("state-dir"));
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, a.get("guarantee"));
    if (a.containsKey("commit-interval-ms")) p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, a.get("commit-interval-ms"));
    p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
    p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    /* widen's producer lingers 5 ms (Kafka Streams' own default is 100 ms): the same for both */
    p.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), a.getOrDefault("linger-ms", "5"));

    StreamsBuilder builder = new StreamsBuilder();
    builder.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(STORE), Serdes.Bytes(),
        Serdes.ByteArray()));
    Map<String, Integer> streamOfTopic = new HashMap<>();
    KStream<Bytes, byte[]> all = null;
    for (int s = 0; s < STREAMS.length; s++) {
      String topic = prefix + STREAMS[s];
      KStream<Bytes, byte[]> in = builder.stream(topic, Consumed.with(Serdes.Bytes(), Serdes.ByteArray()));
      if (rekeyed.contains(STREAMS[s])) {
        final int stream = s;
        String name = "rekey-" + STREAMS[s];
        in = in.selectKey((k, v) -> v == null ? k : keyOf(v, stream))
            .repartition(Repartitioned.<Bytes, byte[]>as(name).withKeySerde(Serdes.Bytes())
                .withValueSerde(Serdes.ByteArray()));
        streamOfTopic.put(appId + "-" + name + "-repartition", s);
      } else {
        streamOfTopic.put(topic, s);
      }
      all = all == null ? in : all.merge(in);
    }
    all.process(() -> new WideProcessor(streamOfTopic), STORE)
        .to(a.get("output"), Produced.with(Serdes.Bytes(), Serdes.ByteArray()));

    KafkaStreams streams = new KafkaStreams(builder.build(), p);
    String ready = a.get("ready-file");
    streams.setStateListener((now, old) -> {
      if (now == KafkaStreams.State.RUNNING && ready != null) {
        try {
          new File(ready).createNewFile();
        } catch (IOException e) {
          System.err.println("peer: cannot create " + ready);
        }
      }
    });
    streams.setUncaughtExceptionHandler(e -> {
      System.err.println("peer: stream thread failed: " + e);
      e.printStackTrace();
      return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
          .SHUTDOWN_CLIENT;
    });
    streams.start();
    long seen = 0, changed = System.nanoTime();
    boolean failed = false;
    for (;;) {
      Thread.sleep(20);
      KafkaStreams.State st = streams.state();
      if (st == KafkaStreams.State.ERROR || st == KafkaStreams.State.NOT_RUNNING
          || st == KafkaStreams.State.PENDING_ERROR) {
        failed = true;
        break;
      }
      long n = RECORDS.get();
      if (n != seen) {
        seen = n;
        changed = System.nanoTime();
      } else if (n > 0 && n >= expect && System.nanoTime() - changed >= maxIdleMs * 1_000_000L) {
        break;
      }
    }
    lastCpuNanos = processCpuNanos();
    streams.close(Duration.ofSeconds(60));
    long cpu = processCpuNanos();
    System.out.printf("PEER records=%d cpu_s=%.3f cpu_first_s=%.3f cpu_idle_s=%.3f wall_s=%.3f%n", RECORDS.get(),
        cpu / 1e9, firstCpuNanos / 1e9, lastCpuNanos / 1e9, (lastNanos - firstNanos) / 1e9);
    System.out.flush();
    System.exit(failed ? 1 : 0);
  }
}

// Cross-checks kcoord-record-batches against Apache Kafka's own Java client. Not run by CI (it needs a
// JDK and Maven Central); see ../README.md.
//
//   gen   DIR        writes DIR/<name>.hex: batches built by Kafka's MemoryRecordsBuilder
//   dump  FILE       reads "<name> <hex>" lines (batches built by kcoord-record-batches) and prints
//                    every batch and record as Kafka reads them, after Kafka's CRC check
//
// The records follow one pattern, which tests/kafka_fixtures.rs rebuilds: record i has key
// "key-i" (null when i % 3 == 2), value "value-i" repeated `reps` times (null when i % 5 == 4),
// headers [("h1", "v<i>"), ("h2", null)] when i is even, timestamp 1700000000000 + 10 i.

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.ControlRecordType;
import org.apache.kafka.common.record.EndTransactionMarker;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.MemoryRecordsBuilder;
import org.apache.kafka.common.record.MutableRecordBatch;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.ByteBufferOutputStream;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

public class KafkaFixtures {
    static final long BASE_TS = 1700000000000L;

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static byte[] key(int i) {
        return i % 3 == 2 ? null : utf8("key-" + i);
    }

    static byte[] value(int i, int reps) {
        if (i % 5 == 4) return null;
        StringBuilder sb = new StringBuilder();
        for (int r = 0; r < reps; r++) sb.append("value-").append(i);
        return utf8(sb.toString());
    }

    static Header[] headers(int i) {
        if (i % 2 != 0) return new Header[0];
        return new Header[] {new RecordHeader("h1", utf8("v" + i)), new RecordHeader("h2", null)};
    }

    static MemoryRecordsBuilder builder(Compression c, TimestampType tt, long baseOffset, long logAppendTime,
                                        long pid, short epoch, int seq, boolean txn, int leaderEpoch,
                                        long deleteHorizon) {
        ByteBufferOutputStream out = new ByteBufferOutputStream(1024);
        return new MemoryRecordsBuilder(out, RecordBatch.MAGIC_VALUE_V2, c, tt, baseOffset, logAppendTime,
            pid, epoch, seq, txn, false, leaderEpoch, Integer.MAX_VALUE, deleteHorizon);
    }

    static String hex(ByteBuffer b) {
        StringBuilder sb = new StringBuilder();
        ByteBuffer d = b.duplicate();
        while (d.hasRemaining()) sb.append(String.format("%02x", d.get()));
        return sb.toString();
    }

    static String hexOrNull(ByteBuffer b) {
        return b == null ? "null" : hex(b);
    }

    static void write(Path dir, String name, MemoryRecords records) throws Exception {
        Files.writeString(dir.resolve(name + ".hex"), hex(records.buffer()) + "\n");
    }

    static MemoryRecords pattern(Compression c, int n, int reps) {
        MemoryRecordsBuilder b = builder(c, TimestampType.CREATE_TIME, 0L, RecordBatch.NO_TIMESTAMP,
            4242L, (short) 3, 17, false, RecordBatch.NO_PARTITION_LEADER_EPOCH, RecordBatch.NO_TIMESTAMP);
        for (int i = 0; i < n; i++) b.append(BASE_TS + 10L * i, key(i), value(i, reps), headers(i));
        return b.build();
    }

    static void gen(Path dir) throws Exception {
        Files.createDirectories(dir);
        String[] names = {"none", "gzip", "snappy", "lz4", "zstd"};
        Compression[] codecs = {Compression.NONE, Compression.gzip().build(), Compression.snappy().build(),
            Compression.lz4().build(), Compression.zstd().build()};
        for (int k = 0; k < names.length; k++) {
            write(dir, names[k], pattern(codecs[k], 5, 1));
            // 300 records of about 1.4 KB: several LZ4 blocks and snappy chunks (not kept
            // uncompressed: 420 KB of hex for nothing new).
            if (k > 0) write(dir, names[k] + "-large", pattern(codecs[k], 300, 200));
        }

        write(dir, "txn-commit-marker", MemoryRecords.withEndTransactionMarker(100L, BASE_TS + 5, 5, 77L,
            (short) 2, new EndTransactionMarker(ControlRecordType.COMMIT, 9)));

        MemoryRecordsBuilder lat = builder(Compression.NONE, TimestampType.LOG_APPEND_TIME, 1000L, BASE_TS + 9999,
            88L, (short) 1, 0, true, 7, RecordBatch.NO_TIMESTAMP);
        for (int i = 0; i < 3; i++) lat.append(BASE_TS + 10L * i, key(i), value(i, 1), headers(i));
        write(dir, "log-append-time-txn", lat.build());

        // As compaction writes a retained batch: non-contiguous offsets, the original last offset,
        // a delete horizon.
        MemoryRecordsBuilder dh = builder(Compression.gzip().build(), TimestampType.CREATE_TIME, 500L,
            RecordBatch.NO_TIMESTAMP, RecordBatch.NO_PRODUCER_ID, RecordBatch.NO_PRODUCER_EPOCH,
            RecordBatch.NO_SEQUENCE, false, 3, BASE_TS + 100000);
        int[] deltas = {0, 3, 7};
        for (int i = 0; i < deltas.length; i++)
            dh.appendWithOffset(500L + deltas[i], BASE_TS + 10L * deltas[i], key(deltas[i]), value(deltas[i], 1),
                headers(deltas[i]));
        dh.overrideLastOffset(509L);
        write(dir, "compacted-delete-horizon", dh.build());
    }

    static void dump(Path file) throws Exception {
        for (String line : Files.readAllLines(file)) {
            if (line.isBlank()) continue;
            String[] parts = line.trim().split(" ");
            byte[] bytes = new byte[parts[1].length() / 2];
            for (int i = 0; i < bytes.length; i++)
                bytes[i] = (byte) Integer.parseInt(parts[1].substring(2 * i, 2 * i + 2), 16);
            MemoryRecords records = MemoryRecords.readableRecords(ByteBuffer.wrap(bytes));
            System.out.println("== " + parts[0]);
            for (MutableRecordBatch batch : records.batches()) {
                batch.ensureValid();
                System.out.println("batch base=" + batch.baseOffset() + " last=" + batch.lastOffset()
                    + " count=" + batch.countOrNull() + " crc=" + batch.checksum()
                    + " compression=" + batch.compressionType().name + " type=" + batch.timestampType()
                    + " max=" + batch.maxTimestamp() + " pid=" + batch.producerId() + " epoch=" + batch.producerEpoch()
                    + " seq=" + batch.baseSequence() + " lastseq=" + batch.lastSequence()
                    + " txn=" + batch.isTransactional() + " control=" + batch.isControlBatch()
                    + " leader=" + batch.partitionLeaderEpoch() + " horizon=" + batch.deleteHorizonMs());
                for (Record r : batch) {
                    List<String> hs = new ArrayList<>();
                    for (Header h : r.headers())
                        hs.add(h.key() + ":" + (h.value() == null ? "null" : hex(ByteBuffer.wrap(h.value()))));
                    System.out.println("record off=" + r.offset() + " ts=" + r.timestamp() + " key="
                        + hexOrNull(r.key()) + " value=" + hexOrNull(r.value()) + " headers=" + hs);
                }
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("gen")) gen(Path.of(args[1]));
        else dump(Path.of(args[1]));
    }
}

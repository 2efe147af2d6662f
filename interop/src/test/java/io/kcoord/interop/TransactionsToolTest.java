package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kcoord.interop.diff.WireClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.InitProducerIdRequestData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.InitProducerIdRequest;
import org.apache.kafka.common.requests.InitProducerIdResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Kafka 4.4's {@code kafka-transactions} tool against the server (kcoord; Kafka 4.4 with
 * {@code -Dinterop.target=kafka}): {@code list}, {@code describe}, {@code describe-producers},
 * {@code find-hanging} and {@code abort} of a hanging transaction, their output parsed and
 * compared with what Kafka 4.4 prints.
 *
 * <p>A hanging transaction is made as it happens in the wild: the server is started with
 * {@code transaction.partition.verification.enable=false}, and a transactional batch is written
 * (Produce v11, as a pre-KIP-890 client would) to a partition never added to the transaction,
 * so the partition holds an open transaction its coordinator knows nothing of.
 */
class TransactionsToolTest {
    static final List<String> SETTINGS = List.of(
            "node.id=0",
            "transaction.partition.verification.enable=false",
            "transaction.max.timeout.ms=60000",
            "transaction.state.log.num.partitions=5");
    private static final long TS = 1_700_000_000_000L;

    private Target target;
    private final List<AutoCloseable> open = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        target = Target.start("transactions-tool", SETTINGS);
        Clients.createTopics(target.bootstrap(), 1, "tool-t", "tool-ok");
    }

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : open) {
            try {
                c.close();
            } catch (Exception ignored) {
                // closing anyway
            }
        }
        target.close();
    }

    private Tools.Run tool(String... args) {
        List<String> all = new ArrayList<>(List.of("--bootstrap-server", target.bootstrap()));
        all.addAll(List.of(args));
        Tools.Run run = Tools.kafkaTransactions(all.toArray(String[]::new));
        System.out.println("kafka-transactions " + String.join(" ", args) + "\n" + run);
        return run;
    }

    /** The tool's table: one list of cells per line (header first), split on runs of spaces. */
    static List<List<String>> table(String stdout) {
        List<List<String>> rows = new ArrayList<>();
        for (String line : stdout.split("\n")) {
            if (!line.isBlank()) rows.add(Arrays.asList(line.trim().split("\\s+")));
        }
        return rows;
    }

    static List<String> row(List<List<String>> table, String first) {
        return table.stream().filter(r -> r.get(0).equals(first)).findFirst()
                .orElseThrow(() -> new AssertionError("no row " + first + " in " + table));
    }

    /** InitProducerId v5 for {@code tid} on the wire (retrying while the coordinator loads); {pid, epoch}. */
    private long[] initOnTheWire(WireClient wire, String tid) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            AbstractResponse r = wire.send(new InitProducerIdRequest.Builder(new InitProducerIdRequestData()
                    .setTransactionalId(tid).setTransactionTimeoutMs(60_000).setProducerId(-1).setProducerEpoch((short) -1)),
                    (short) 5);
            InitProducerIdResponse ip = (InitProducerIdResponse) r;
            if (ip.error() == Errors.NONE) return new long[] {ip.data().producerId(), ip.data().producerEpoch()};
            if (System.currentTimeMillis() > deadline) throw new AssertionError("InitProducerId: " + ip.error());
            Thread.sleep(200);
        }
    }

    /** A transactional batch at offset 0 of tool-t-0, never added to the transaction: a hanging transaction. */
    private long[] makeHanging() throws Exception {
        // FindCoordinator first, as a client does (Kafka creates __transaction_state on it).
        try (Admin admin = Clients.admin(target.bootstrap())) {
            Clients.await(() -> {
                try {
                    admin.describeTransactions(List.of("tool-hanging")).all().get(10, TimeUnit.SECONDS);
                    return true;
                } catch (Exception e) {
                    return e.getCause() instanceof org.apache.kafka.common.errors.TransactionalIdNotFoundException;
                }
            }, Duration.ofSeconds(60), () -> "no transaction coordinator");
        }
        try (WireClient wire = new WireClient(target.bootstrap(), "tool-test")) {
            long[] p = initOnTheWire(wire, "tool-hanging");
            MemoryRecords batch = MemoryRecords.withTransactionalRecords(Compression.NONE, p[0], (short) p[1], 0,
                    new SimpleRecord(TS, "k".getBytes(StandardCharsets.UTF_8), "hanging".getBytes(StandardCharsets.UTF_8)));
            ProduceRequestData.TopicProduceDataCollection topics = new ProduceRequestData.TopicProduceDataCollection();
            topics.add(new ProduceRequestData.TopicProduceData().setName("tool-t").setPartitionData(List.of(
                    new ProduceRequestData.PartitionProduceData().setIndex(0).setRecords(batch))));
            ProduceResponse r = (ProduceResponse) wire.send(ProduceRequest.builder(new ProduceRequestData().setAcks((short) -1)
                    .setTimeoutMs(30_000).setTransactionalId("tool-hanging").setTopicData(topics), true), (short) 11);
            short error = r.data().responses().iterator().next().partitionResponses().get(0).errorCode();
            assertEquals(0, error, "the unverified transactional write: " + Errors.forCode(error));
            return p;
        }
    }

    private KafkaProducer<String, String> ongoing() throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, target.bootstrap());
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "tool-ongoing");
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30_000);
        KafkaProducer<String, String> p = new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
        open.add(p);
        p.initTransactions();
        p.beginTransaction();
        p.send(new ProducerRecord<>("tool-ok", 0, "k", "ongoing")).get(30, TimeUnit.SECONDS);
        return p;
    }

    private long lso(Admin admin, TopicPartition tp) throws Exception {
        return admin.listOffsets(Map.of(tp, OffsetSpec.latest()), new ListOffsetsOptions(IsolationLevel.READ_COMMITTED))
                .partitionResult(tp).get(30, TimeUnit.SECONDS).offset();
    }

    @Test
    void list_describe_describe_producers_find_hanging_and_abort() throws Exception {
        long[] hanging = makeHanging();
        ongoing();
        String hangingPid = String.valueOf(hanging[0]);
        long ongoingPid;
        try (Admin admin = Clients.admin(target.bootstrap())) {
            ongoingPid = admin.describeTransactions(List.of("tool-ongoing")).description("tool-ongoing")
                    .get(30, TimeUnit.SECONDS).producerId();
        }

        Tools.Run list = tool("list");
        assertEquals(0, list.exitCode(), list.toString());
        List<List<String>> rows = table(list.stdout());
        assertEquals(List.of("TransactionalId", "Coordinator", "ProducerId", "TransactionState"), rows.get(0));
        assertEquals(List.of("tool-hanging", "0", hangingPid, "Empty"), row(rows, "tool-hanging"));
        assertEquals(List.of("tool-ongoing", "0", String.valueOf(ongoingPid), "Ongoing"), row(rows, "tool-ongoing"));
        assertEquals(3, rows.size(), list.stdout());

        Tools.Run describe = tool("describe", "--transactional-id", "tool-ongoing");
        assertEquals(0, describe.exitCode(), describe.toString());
        rows = table(describe.stdout());
        assertEquals(List.of("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"),
                rows.get(0));
        List<String> d = rows.get(1);
        assertEquals(List.of("0", "tool-ongoing", String.valueOf(ongoingPid), "0", "Ongoing", "60000"), d.subList(0, 6));
        assertTrue(Long.parseLong(d.get(6)) > TS && Long.parseLong(d.get(7)) >= 0, d.toString());
        assertEquals("tool-ok-0", d.get(8));

        Tools.Run unknown = tool("describe", "--transactional-id", "tool-nope");
        assertEquals(1, unknown.exitCode(), unknown.toString());
        assertEquals("Failed to describe transaction state of transactional-id `tool-nope`: DescribeTransactions request for "
                + "transactionalId `tool-nope` failed because the ID could not be found. Enable debug logging for additional detail.",
                unknown.stderr().trim(), unknown.toString());

        Tools.Run producers = tool("describe-producers", "--topic", "tool-t", "--partition", "0");
        assertEquals(0, producers.exitCode(), producers.toString());
        rows = table(producers.stdout());
        assertEquals(List.of("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                "CurrentTransactionStartOffset"), rows.get(0));
        assertEquals(List.of(hangingPid, "0", "-1", "0", String.valueOf(TS), "0"), rows.get(1));
        assertEquals(2, rows.size());

        // The batch's timestamp (TS, 2023) makes it older than the tool's default 15 minutes:
        // Duration(min) is counted from LastTimestamp.
        Tools.Run hang = tool("find-hanging", "--broker-id", "0");
        assertEquals(0, hang.exitCode(), hang.toString());
        rows = table(hang.stdout());
        assertEquals(List.of("Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                "LastTimestamp", "Duration(min)"), rows.get(0));
        assertEquals(List.of("tool-t", "0", hangingPid, "0", "-1", "0", String.valueOf(TS)), rows.get(1).subList(0, 7));
        assertEquals(2, rows.size(), "only the hanging one (the ongoing one is known to its coordinator): " + hang.stdout());

        try (Admin admin = Clients.admin(target.bootstrap())) {
            TopicPartition tp = new TopicPartition("tool-t", 0);
            assertEquals(0L, lso(admin, tp));
            Tools.Run abort = tool("abort", "--topic", "tool-t", "--partition", "0", "--start-offset", "0");
            assertEquals(0, abort.exitCode(), abort.toString());
            assertEquals("", abort.stdout().trim() + abort.stderr().trim());
            // The abort marker (offset 1) is written: the LSO moves past it.
            Clients.await(() -> {
                try {
                    return lso(admin, tp) == 2L;
                } catch (Exception e) {
                    return false;
                }
            }, Duration.ofSeconds(30), () -> "the LSO of tool-t-0 did not move to 2");
        }
        Tools.Run after = tool("describe-producers", "--topic", "tool-t", "--partition", "0");
        rows = table(after.stdout());
        // The marker the tool had written is the producer's last entry now: coordinator epoch 0
        // (the tool's WriteTxnMarkers carries it), its timestamp the server's clock, no open
        // transaction (printed "None").
        assertEquals(List.of(hangingPid, "0", "0", "0"), rows.get(1).subList(0, 4), after.stdout());
        assertTrue(Long.parseLong(rows.get(1).get(4)) > TS, after.stdout());
        assertEquals("None", rows.get(1).get(5), "no open transaction: " + after.stdout());
        Tools.Run noneHanging = tool("find-hanging", "--broker-id", "0");
        assertEquals(1, table(noneHanging.stdout()).size(), noneHanging.stdout());
    }
}

package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.InvalidTxnStateException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Kafka 4.4's Java transactional producer against the server (kcoord; Kafka 4.4 itself with
 * {@code -Dinterop.target=kafka}): what a read_committed and a read_uncommitted consumer see of
 * committed and aborted transactions over three partitions of two topics (offsets included:
 * control records take an offset each and never surface), offsets sent to a transaction
 * (visible to {@code committed()} only once it commits), fencing by a second producer with the
 * same transactional.id, the coordinator aborting a transaction left open past its timeout, and
 * a timeout above {@code transaction.max.timeout.ms}. Every assertion is what Kafka 4.4 does.
 */
class TransactionsTest {
    /** The settings both servers get: a short abort check so a 3 s timeout is acted on quickly. */
    static final List<String> SETTINGS = List.of(
            "transaction.max.timeout.ms=60000",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms=500",
            "transaction.state.log.num.partitions=5");

    private Target target;
    private final List<AutoCloseable> open = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        target = Target.start("transactions", SETTINGS);
        Clients.createTopics(target.bootstrap(), 2, "txn-a");
        Clients.createTopics(target.bootstrap(), 1, "txn-b", "txn-in", "txn-fence", "txn-timeout", "txn-pending");
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

    private static final TopicPartition A0 = new TopicPartition("txn-a", 0);
    private static final TopicPartition A1 = new TopicPartition("txn-a", 1);
    private static final TopicPartition B0 = new TopicPartition("txn-b", 0);
    private static final TopicPartition IN0 = new TopicPartition("txn-in", 0);
    private static final List<TopicPartition> THREE = List.of(A0, A1, B0);

    private KafkaProducer<String, String> producer(String transactionalId, Map<String, Object> extra) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, target.bootstrap());
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30_000);
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30_000);
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        props.putAll(extra);
        KafkaProducer<String, String> p = new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
        open.add(p);
        return p;
    }

    private KafkaConsumer<String, String> consumer(IsolationLevel isolation, String group) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, target.bootstrap());
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation.toString());
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000);
        if (group != null) props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        KafkaConsumer<String, String> c = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer());
        open.add(c);
        return c;
    }

    /** Offsets of {@code partitions} at {@code isolation} (latest: the LSO for READ_COMMITTED, else the HW). */
    private static Map<TopicPartition, Long> ends(Admin admin, List<TopicPartition> partitions, IsolationLevel isolation)
            throws Exception {
        Map<TopicPartition, OffsetSpec> spec = partitions.stream().collect(Collectors.toMap(Function.identity(), tp -> OffsetSpec.latest()));
        return admin.listOffsets(spec, new ListOffsetsOptions(isolation)).all().get(30, TimeUnit.SECONDS)
                .entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
    }

    /** Waits until no transaction is open on {@code partitions}: the LSO has caught up with the HW. */
    private static Map<TopicPartition, Long> awaitStable(Admin admin, List<TopicPartition> partitions) throws Exception {
        Map<TopicPartition, Long>[] last = new Map[2];
        Clients.await(() -> {
            try {
                last[0] = ends(admin, partitions, IsolationLevel.READ_UNCOMMITTED);
                last[1] = ends(admin, partitions, IsolationLevel.READ_COMMITTED);
                return last[0].equals(last[1]);
            } catch (Exception e) {
                return false;
            }
        }, Duration.ofSeconds(30), () -> "LSO " + last[1] + " below the HW " + last[0]);
        return last[0];
    }

    /** Every record of {@code partitions} as a consumer at {@code isolation} sees them, up to {@code end}. */
    private List<ConsumerRecord<String, String>> read(IsolationLevel isolation, List<TopicPartition> partitions,
            Map<TopicPartition, Long> end) throws Exception {
        KafkaConsumer<String, String> c = consumer(isolation, null);
        c.assign(partitions);
        c.seekToBeginning(partitions);
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        Clients.await(() -> {
            c.poll(Duration.ofMillis(100)).forEach(out::add);
            return partitions.stream().allMatch(tp -> c.position(tp) >= end.get(tp));
        }, Duration.ofSeconds(30), () -> isolation + " consumer at " + partitions.stream().map(c::position).toList()
                + ", end " + end + "; read " + out);
        // Positions stop at the end exactly: past the last control record, nothing beyond.
        for (TopicPartition tp : partitions) assertEquals(end.get(tp), c.position(tp), "position of " + tp);
        return out;
    }

    /** "partition:offset:value" of each record of {@code tp}, in order. */
    private static List<String> seen(List<ConsumerRecord<String, String>> records, TopicPartition tp) {
        return records.stream().filter(r -> r.topic().equals(tp.topic()) && r.partition() == tp.partition())
                .map(r -> r.offset() + ":" + r.value()).toList();
    }

    private static void sendTo(KafkaProducer<String, String> p, String tag, List<TopicPartition> partitions) throws Exception {
        List<java.util.concurrent.Future<?>> sent = new ArrayList<>();
        for (TopicPartition tp : partitions) {
            for (int i = 0; i < 2; i++) {
                sent.add(p.send(new ProducerRecord<>(tp.topic(), tp.partition(), "k" + i, tag + "-" + i)));
            }
        }
        for (java.util.concurrent.Future<?> f : sent) f.get(30, TimeUnit.SECONDS);
    }

    static String chain(Throwable e) {
        StringBuilder b = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) b.append(" <- ").append(t.getClass().getName()).append(": ").append(t.getMessage());
        return b.toString();
    }

    private OffsetAndMetadata committed(KafkaConsumer<String, String> c, TopicPartition tp, Duration timeout) {
        return c.committed(Set.of(tp), timeout).get(tp);
    }

    @Test
    void read_committed_sees_committed_transactions_only_and_read_uncommitted_sees_all() throws Exception {
        KafkaProducer<String, String> p = producer("txn-app", Map.of());
        p.initTransactions();
        KafkaConsumer<String, String> groupReader = consumer(IsolationLevel.READ_COMMITTED, "txn-group");

        p.beginTransaction();
        sendTo(p, "c1", THREE);
        p.sendOffsetsToTransaction(Map.of(IN0, new OffsetAndMetadata(10, "first")), new ConsumerGroupMetadata("txn-group"));
        p.commitTransaction();
        assertEquals(new OffsetAndMetadata(10, "first"), committed(groupReader, IN0, Duration.ofSeconds(30)));

        p.beginTransaction();
        sendTo(p, "a2", THREE);
        p.sendOffsetsToTransaction(Map.of(IN0, new OffsetAndMetadata(20, "aborted")), new ConsumerGroupMetadata("txn-group"));
        p.abortTransaction();
        assertEquals(new OffsetAndMetadata(10, "first"), committed(groupReader, IN0, Duration.ofSeconds(30)));

        p.beginTransaction();
        sendTo(p, "c3", THREE);
        p.sendOffsetsToTransaction(Map.of(IN0, new OffsetAndMetadata(30, "third")), new ConsumerGroupMetadata("txn-group"));
        p.commitTransaction();
        assertEquals(new OffsetAndMetadata(30, "third"), committed(groupReader, IN0, Duration.ofSeconds(30)));

        try (Admin admin = Clients.admin(target.bootstrap())) {
            Map<TopicPartition, Long> end = awaitStable(admin, THREE);
            // Two records and one control record (the commit or abort marker) per transaction.
            for (TopicPartition tp : THREE) assertEquals(9L, end.get(tp), "HW of " + tp);
            List<ConsumerRecord<String, String>> committed = read(IsolationLevel.READ_COMMITTED, THREE, end);
            List<ConsumerRecord<String, String>> all = read(IsolationLevel.READ_UNCOMMITTED, THREE, end);
            for (TopicPartition tp : THREE) {
                assertEquals(List.of("0:c1-0", "1:c1-1", "6:c3-0", "7:c3-1"), seen(committed, tp), "read_committed " + tp);
                assertEquals(List.of("0:c1-0", "1:c1-1", "3:a2-0", "4:a2-1", "6:c3-0", "7:c3-1"), seen(all, tp),
                        "read_uncommitted " + tp);
            }
            assertEquals(18, all.size());
            assertEquals(12, committed.size());

            TransactionDescription d = admin.describeTransactions(List.of("txn-app")).description("txn-app")
                    .get(30, TimeUnit.SECONDS);
            assertEquals(TransactionState.COMPLETE_COMMIT, d.state());
            assertEquals(Set.of(), d.topicPartitions());
            assertEquals(60_000, d.transactionTimeoutMs());
        }
    }

    @Test
    void offsets_sent_to_a_transaction_are_visible_to_committed_only_after_the_commit() throws Exception {
        KafkaProducer<String, String> p = producer("txn-offsets", Map.of());
        p.initTransactions();
        TopicPartition pending = new TopicPartition("txn-pending", 0);
        p.beginTransaction();
        p.send(new ProducerRecord<>("txn-pending", 0, "k", "v")).get(30, TimeUnit.SECONDS);
        p.sendOffsetsToTransaction(Map.of(IN0, new OffsetAndMetadata(42, "m")), new ConsumerGroupMetadata("txn-pending-group"));

        // Open: the consumer's committed() asks OffsetFetch with RequireStable whatever its
        // isolation level, gets UNSTABLE_OFFSET_COMMIT (88), retries it and times out; the Admin
        // client (RequireStable false) sees no offset at all.
        KafkaConsumer<String, String> uncommitted = consumer(IsolationLevel.READ_UNCOMMITTED, "txn-pending-group");
        KafkaConsumer<String, String> committed = consumer(IsolationLevel.READ_COMMITTED, "txn-pending-group");
        assertThrows(TimeoutException.class, () -> committed(uncommitted, IN0, Duration.ofSeconds(3)));
        assertThrows(TimeoutException.class, () -> committed(committed, IN0, Duration.ofSeconds(3)));
        try (Admin admin = Clients.admin(target.bootstrap())) {
            assertEquals(Map.of(), admin.listConsumerGroupOffsets("txn-pending-group")
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS));
            // The open transaction holds the LSO at its first offset.
            assertEquals(Map.of(pending, 0L), ends(admin, List.of(pending), IsolationLevel.READ_COMMITTED));
            assertEquals(Map.of(pending, 1L), ends(admin, List.of(pending), IsolationLevel.READ_UNCOMMITTED));
            TransactionDescription d = admin.describeTransactions(List.of("txn-offsets")).description("txn-offsets")
                    .get(30, TimeUnit.SECONDS);
            assertEquals(TransactionState.ONGOING, d.state());
            // The Java 4.4 producer adds the offsets' partition of __consumer_offsets to the transaction.
            assertTrue(d.topicPartitions().contains(pending), d.toString());
            assertTrue(d.topicPartitions().stream().anyMatch(tp -> tp.topic().equals("__consumer_offsets")), d.toString());

            p.commitTransaction();
            assertEquals(new OffsetAndMetadata(42, "m"), committed(committed, IN0, Duration.ofSeconds(30)));
            assertEquals(new OffsetAndMetadata(42, "m"), committed(uncommitted, IN0, Duration.ofSeconds(30)));
            assertEquals(Map.of(IN0, new OffsetAndMetadata(42, "m")), admin.listConsumerGroupOffsets("txn-pending-group")
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS));
        }
    }

    @Test
    void a_second_producer_with_the_same_transactional_id_fences_the_first() throws Exception {
        TopicPartition fence = new TopicPartition("txn-fence", 0);
        KafkaProducer<String, String> first = producer("txn-fenced", Map.of());
        first.initTransactions();
        first.beginTransaction();
        first.send(new ProducerRecord<>("txn-fence", 0, "k", "first")).get(30, TimeUnit.SECONDS);

        // The second producer's InitProducerId aborts the first one's open transaction.
        KafkaProducer<String, String> second = producer("txn-fenced", Map.of());
        second.initTransactions();

        ExecutionException sendFailed = assertThrows(ExecutionException.class,
                () -> first.send(new ProducerRecord<>("txn-fence", 0, "k", "first-again")).get(30, TimeUnit.SECONDS));
        // Kafka 4.4 (transaction.version 2): the coordinator bumped the epoch when it aborted the
        // first producer's transaction, so its next Produce is INVALID_PRODUCER_EPOCH (47), which
        // the producer treats as abortable; the commit fails with it; the abort it then sends
        // (EndTxn) is answered PRODUCER_FENCED (90), fatal: every later call is fenced.
        assertInstanceOf(InvalidProducerEpochException.class, sendFailed.getCause(), sendFailed.toString());
        assertThrows(InvalidProducerEpochException.class, first::commitTransaction);
        assertThrows(ProducerFencedException.class, first::abortTransaction);
        assertThrows(ProducerFencedException.class, first::beginTransaction);

        second.beginTransaction();
        second.send(new ProducerRecord<>("txn-fence", 0, "k", "second")).get(30, TimeUnit.SECONDS);
        second.commitTransaction();

        try (Admin admin = Clients.admin(target.bootstrap())) {
            Map<TopicPartition, Long> end = awaitStable(admin, List.of(fence));
            // first (offset 0), its abort marker (1), second (2), its commit marker (3).
            assertEquals(Map.of(fence, 4L), end);
            assertEquals(List.of("2:second"), seen(read(IsolationLevel.READ_COMMITTED, List.of(fence), end), fence));
            assertEquals(List.of("0:first", "2:second"), seen(read(IsolationLevel.READ_UNCOMMITTED, List.of(fence), end), fence));
        }
    }

    @Test
    void a_transaction_left_open_past_its_timeout_is_aborted_by_the_coordinator() throws Exception {
        TopicPartition tp = new TopicPartition("txn-timeout", 0);
        KafkaProducer<String, String> p = producer("txn-timeout", Map.of(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 3000));
        p.initTransactions();
        p.beginTransaction();
        p.send(new ProducerRecord<>("txn-timeout", 0, "k", "left-open")).get(30, TimeUnit.SECONDS);

        try (Admin admin = Clients.admin(target.bootstrap())) {
            TransactionDescription[] last = {null};
            Clients.await(() -> {
                try {
                    last[0] = admin.describeTransactions(List.of("txn-timeout")).description("txn-timeout")
                            .get(30, TimeUnit.SECONDS);
                } catch (Exception e) {
                    return false;
                }
                return last[0].state() == TransactionState.COMPLETE_ABORT;
            }, Duration.ofSeconds(30), () -> "the transaction was not aborted: " + last[0]);
            assertEquals(3000, last[0].transactionTimeoutMs());

            Map<TopicPartition, Long> end = awaitStable(admin, List.of(tp));
            assertEquals(Map.of(tp, 2L), end); // the record and the coordinator's abort marker
            assertEquals(List.of(), seen(read(IsolationLevel.READ_COMMITTED, List.of(tp), end), tp));
            assertEquals(List.of("0:left-open"), seen(read(IsolationLevel.READ_UNCOMMITTED, List.of(tp), end), tp));
        }

        // The producer learns it on its next use: the coordinator bumped the epoch when it aborted.
        // Kafka 4.4 answers the stale producer's EndTxn(commit) INVALID_TXN_STATE (48): the
        // producer's commit throws InvalidTxnStateException, which is fatal to it (abort and any
        // later call: "Cannot execute transactional method because we are in an error state").
        assertThrows(InvalidTxnStateException.class, p::commitTransaction);
        KafkaException abort = assertThrows(KafkaException.class, p::abortTransaction);
        assertInstanceOf(InvalidTxnStateException.class, abort.getCause(), chain(abort));
        assertThrows(KafkaException.class, p::beginTransaction);
    }

    @Test
    void a_transaction_timeout_above_the_brokers_maximum_fails_init_transactions_with_invalid_transaction_timeout() {
        KafkaProducer<String, String> p = producer("txn-too-long", Map.of(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 120_000));
        // INVALID_TRANSACTION_TIMEOUT (50) is not among the InitProducerId errors the Java
        // producer maps: initTransactions() throws a plain KafkaException with the error's text.
        KafkaException e = assertThrows(KafkaException.class, p::initTransactions);
        assertEquals(KafkaException.class, e.getClass());
        assertEquals("Unexpected error in InitProducerIdResponse; The transaction timeout is larger than the maximum "
                + "value allowed by the broker (as configured by transaction.max.timeout.ms).", e.getMessage());
        assertNull(e.getCause());
    }
}

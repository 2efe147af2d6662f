package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/**
 * Kafka 4.4's online migration between the group protocols, with its own {@code KafkaConsumer}
 * against the server (kcoord; Kafka 4.4 with {@code -Dinterop.target=kafka}): two consumers
 * with {@code group.protocol=classic} consume a topic, a third with {@code group.protocol=consumer}
 * joins the same group, which is upgraded online to a consumer group with the classic members
 * in it; every partition is owned once and the newcomer resumes from the committed offsets.
 * When it leaves, the group goes back to a classic group and the classic members go on
 * consuming.
 */
class OnlineMigrationTest {
    private static final List<String> SETTINGS = List.of(
            "node.id=0", "group.initial.rebalance.delay.ms=0", "group.consumer.assignment.interval.ms=0");
    private static final String TOPIC = "migrate-in";
    private static final String GROUP = "migrating";
    private static final int PARTITIONS = 6;

    /** One consumer on its own thread, committing after each poll. */
    private static final class Member implements AutoCloseable {
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicReference<Set<TopicPartition>> assignment = new AtomicReference<>(Set.of());
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        /** The first offset this member read from each partition. */
        final Map<TopicPartition, Long> firstOffsets = new ConcurrentHashMap<>();
        final Thread thread;

        Member(String bootstrap, String protocol, String name, Set<String> seen) {
            Properties props = new Properties();
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(ConsumerConfig.GROUP_ID_CONFIG, GROUP);
            props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
            props.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
            props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            if (protocol.equals("classic")) {
                props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10_000);
                props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
            }
            props.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 30_000);
            thread = new Thread(() -> {
                try (KafkaConsumer<String, String> consumer =
                        new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
                    consumer.subscribe(List.of(TOPIC));
                    while (!stop.get()) {
                        consumer.poll(Duration.ofMillis(100)).forEach(r -> {
                            seen.add(r.value());
                            firstOffsets.putIfAbsent(new TopicPartition(r.topic(), r.partition()), r.offset());
                        });
                        try {
                            consumer.commitSync();
                        } catch (org.apache.kafka.common.errors.RebalanceInProgressException
                                | org.apache.kafka.clients.consumer.CommitFailedException e) {
                            // A commit during a rebalance: the records are committed after it
                            // (or consumed again).
                        }
                        assignment.set(Set.copyOf(consumer.assignment()));
                    }
                } catch (Throwable t) {
                    failure.set(t);
                }
            }, name);
            thread.start();
        }

        @Override
        public void close() throws InterruptedException {
            stop.set(true);
            thread.join(30_000);
        }
    }

    @Test
    void classic_members_are_upgraded_online_and_downgraded_when_the_consumer_leaves() throws Exception {
        try (Target target = Target.start("online-migration", SETTINGS);
                Admin admin = Clients.admin(target.bootstrap());
                KafkaProducer<String, String> producer = Clients.producer(target.bootstrap())) {
            String bootstrap = target.bootstrap();
            Clients.createTopics(bootstrap, PARTITIONS, TOPIC);
            Set<String> seen = ConcurrentHashMap.newKeySet();
            List<Member> classic = new ArrayList<>();
            classic.add(new Member(bootstrap, "classic", "classic-1", seen));
            classic.add(new Member(bootstrap, "classic", "classic-2", seen));
            int sent = produce(producer, 0, 300);
            awaitOwnership(admin, GroupType.CLASSIC, classic);
            awaitConsumed(seen, sent);
            Map<TopicPartition, Long> committed = Clients.awaitCommittedToTheEnd(admin, GROUP, TOPIC, PARTITIONS);

            // The upgrade: a consumer-protocol member joins the classic group.
            try (Member consumer = new Member(bootstrap, "consumer", "consumer-1", seen)) {
                List<Member> all = new ArrayList<>(classic);
                all.add(consumer);
                awaitOwnership(admin, GroupType.CONSUMER, all);
                sent = produce(producer, sent, 300);
                awaitConsumed(seen, sent);
                ConsumerGroupDescription d = describe(admin);
                assertEquals(3, d.members().size());
                assertTrue(!consumer.assignment.get().isEmpty(), "the consumer member got partitions");
                // It resumed where the classic members had committed, not from the beginning.
                consumer.firstOffsets.forEach((tp, first) -> assertTrue(first >= committed.get(tp),
                        tp + " read from " + first + ", committed " + committed.get(tp)));
                assertTrue(!consumer.firstOffsets.isEmpty(), "the consumer member read records");
            }

            // The downgrade: the consumer-protocol member left; the classic members go on.
            awaitOwnership(admin, GroupType.CLASSIC, classic);
            sent = produce(producer, sent, 300);
            awaitConsumed(seen, sent);
            Clients.awaitCommittedToTheEnd(admin, GROUP, TOPIC, PARTITIONS);
            for (Member m : classic) {
                m.close();
                assertEquals(null, m.failure.get(), "a consumer failed");
            }
        }
    }

    private static int produce(KafkaProducer<String, String> producer, int from, int count) throws Exception {
        if (from == 0) {
            // One record to each partition first, each acknowledged: a batch that Kafka refuses
            // while a new partition's leadership settles would otherwise leave the idempotent
            // producer retrying out of sequence.
            for (int p = 0; p < PARTITIONS; p++) {
                producer.send(new ProducerRecord<>(TOPIC, p, "k" + p, "v" + p)).get();
            }
            from = PARTITIONS;
            count -= PARTITIONS;
        }
        for (int i = from; i < from + count; i++) {
            producer.send(new ProducerRecord<>(TOPIC, "k" + i, "v" + i));
        }
        producer.flush();
        return from + count;
    }

    private static void awaitConsumed(Set<String> seen, int total) throws InterruptedException {
        Clients.await(() -> seen.size() == total, Duration.ofSeconds(60),
                () -> "consumed " + seen.size() + " of " + total);
    }

    private static ConsumerGroupDescription describe(Admin admin) {
        try {
            return admin.describeConsumerGroups(List.of(GROUP)).all().get().get(GROUP);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** The group is of {@code type}, Stable, and {@code members} own every partition once. */
    private static void awaitOwnership(Admin admin, GroupType type, List<Member> members)
            throws InterruptedException {
        Clients.await(() -> {
            for (Member m : members) {
                if (m.failure.get() != null) throw new AssertionError(m.failure.get());
            }
            ConsumerGroupDescription d;
            try {
                d = describe(admin);
            } catch (IllegalStateException notYet) {
                return false;
            }
            if (d.type() != type || d.groupState() != GroupState.STABLE
                    || d.members().size() != members.size()) {
                return false;
            }
            List<TopicPartition> owned = new ArrayList<>();
            members.forEach(m -> owned.addAll(m.assignment.get()));
            return owned.size() == PARTITIONS && new HashSet<>(owned).size() == PARTITIONS
                    && members.stream().noneMatch(m -> m.assignment.get().isEmpty());
        }, Duration.ofSeconds(60), () -> "no stable " + type + " ownership by " + members.size()
                + " members: " + describeSafely(admin) + " "
                + members.stream().map(m -> m.assignment.get().toString()).collect(Collectors.joining(" ")));
    }

    private static String describeSafely(Admin admin) {
        try {
            ConsumerGroupDescription d = describe(admin);
            return d.type() + " " + d.groupState() + " " + d.members().size();
        } catch (RuntimeException e) {
            return e.toString();
        }
    }
}

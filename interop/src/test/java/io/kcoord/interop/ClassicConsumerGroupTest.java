package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
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
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Kafka 4.4's {@code KafkaConsumer} with the classic group protocol (JoinGroup, SyncGroup,
 * Heartbeat, LeaveGroup) against the server (kcoord; Kafka 4.4 with
 * {@code -Dinterop.target=kafka}): three members scale out and in under a produce load, with
 * the eager {@code range} assignor and the cooperative {@code cooperative-sticky} one. Every
 * record is consumed, every partition is owned by exactly one member once the group is stable,
 * and the committed offsets reach the end of every partition.
 */
class ClassicConsumerGroupTest {
    static final List<String> SETTINGS = List.of("node.id=0", "group.initial.rebalance.delay.ms=0");
    private static final String TOPIC = "classic-in";
    private static final int PARTITIONS = 6;

    /** One consumer on its own thread, committing after each poll. */
    private static final class Member implements AutoCloseable {
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicReference<Set<TopicPartition>> assignment = new AtomicReference<>(Set.of());
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final Thread thread;

        Member(String bootstrap, String group, String assignor, Set<String> seen) {
            Properties props = new Properties();
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
            props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor.equals("range")
                    ? org.apache.kafka.clients.consumer.RangeAssignor.class.getName()
                    : org.apache.kafka.clients.consumer.CooperativeStickyAssignor.class.getName());
            props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10_000);
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
            props.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 30_000);
            thread = new Thread(() -> {
                try (KafkaConsumer<String, String> consumer =
                        new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
                    consumer.subscribe(List.of(TOPIC));
                    while (!stop.get()) {
                        consumer.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                        try {
                            consumer.commitSync();
                        } catch (org.apache.kafka.common.errors.RebalanceInProgressException
                                | org.apache.kafka.clients.consumer.CommitFailedException e) {
                            // A commit during a rebalance: the next poll completes the rebalance
                            // and the records are committed (or consumed again) after it.
                        }
                        assignment.set(Set.copyOf(consumer.assignment()));
                    }
                } catch (Throwable t) {
                    failure.set(t);
                }
            });
            thread.start();
        }

        @Override
        public void close() throws InterruptedException {
            stop.set(true);
            thread.join(30_000);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"range", "cooperative-sticky"})
    void three_members_scale_out_and_in_under_load(String assignor) throws Exception {
        try (Target target = Target.start("classic-" + assignor, SETTINGS);
                Admin admin = Clients.admin(target.bootstrap());
                KafkaProducer<String, String> producer = Clients.producer(target.bootstrap())) {
            Clients.createTopics(target.bootstrap(), PARTITIONS, TOPIC);
            String group = "classic-" + assignor;
            Set<String> seen = ConcurrentHashMap.newKeySet();
            List<Member> members = new ArrayList<>();
            int sent = 0;
            members.add(new Member(target.bootstrap(), group, assignor, seen));
            sent = produce(producer, sent, 200);
            members.add(new Member(target.bootstrap(), group, assignor, seen));
            members.add(new Member(target.bootstrap(), group, assignor, seen));
            sent = produce(producer, sent, 200);
            awaitStableOwnership(admin, group, assignor, members, 3);
            sent = produce(producer, sent, 200);
            // Scale in: one member leaves (LeaveGroup), the others take its partitions.
            members.remove(0).close();
            sent = produce(producer, sent, 200);
            awaitStableOwnership(admin, group, assignor, members, 2);
            int total = sent;
            Clients.await(() -> seen.size() == total, Duration.ofSeconds(60),
                    () -> "consumed " + seen.size() + " of " + total);
            Clients.awaitCommittedToTheEnd(admin, group, TOPIC, PARTITIONS);
            for (Member m : members) {
                m.close();
                assertEquals(null, m.failure.get(), "a consumer failed");
            }
            Clients.await(() -> describe(admin, group).groupState() == GroupState.EMPTY,
                    Duration.ofSeconds(30), () -> "the group did not become empty");
        }
    }

    private static int produce(KafkaProducer<String, String> producer, int from, int count) throws Exception {
        for (int i = from; i < from + count; i++) {
            producer.send(new ProducerRecord<>(TOPIC, "k" + i, "v" + i));
        }
        producer.flush();
        return from + count;
    }

    private static ConsumerGroupDescription describe(Admin admin, String group) {
        try {
            return admin.describeConsumerGroups(List.of(group)).all().get().get(group);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** The group is Stable with {@code size} members that together own every partition once. */
    private static void awaitStableOwnership(
            Admin admin, String group, String assignor, List<Member> members, int size)
            throws InterruptedException {
        Clients.await(() -> {
            ConsumerGroupDescription d;
            try {
                d = describe(admin, group);
            } catch (IllegalStateException notYet) {
                return false;
            }
            if (d.groupState() != GroupState.STABLE || d.members().size() != size) return false;
            List<TopicPartition> owned = new ArrayList<>();
            members.forEach(m -> owned.addAll(m.assignment.get()));
            return owned.size() == PARTITIONS && new HashSet<>(owned).size() == PARTITIONS;
        }, Duration.ofSeconds(60), () -> "no stable ownership by " + size + " members: "
                + members.stream().map(m -> m.assignment.get() + " " + m.failure.get()).collect(Collectors.joining(" ")));
        ConsumerGroupDescription d = describe(admin, group);
        assertEquals(assignor, d.partitionAssignor());
        Set<TopicPartition> described = new HashSet<>();
        d.members().forEach(m -> described.addAll(m.assignment().topicPartitions()));
        assertEquals(PARTITIONS, described.size(), "the described assignment covers every partition");
    }
}

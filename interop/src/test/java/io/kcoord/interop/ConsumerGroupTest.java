package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/**
 * KIP-848 consumer groups with Kafka 4.4's own {@code KafkaConsumer} ({@code
 * group.protocol=consumer}): three consumers on a six-partition topic under produce load, scaled
 * out and in; each partition owned by exactly one of them once the group is stable, every record
 * consumed, offsets committed and resumed from; {@code kafka-consumer-groups --describe
 * --members} on the group.
 */
class ConsumerGroupTest {
    private static final String TOPIC = "cg-orders";
    private static final String GROUP = "cg-app";
    private static final int PARTITIONS = 6;

    /** One consumer on its own thread: it polls, commits after each poll, and publishes its assignment. */
    private static final class Member implements AutoCloseable {
        final AtomicReference<Set<TopicPartition>> assignment = new AtomicReference<>(Set.of());
        final AtomicBoolean running = new AtomicBoolean(true);
        final Thread thread;
        volatile Throwable failure;

        Member(String bootstrap, String name, Set<String> seen) {
            Properties props = new Properties();
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(ConsumerConfig.GROUP_ID_CONFIG, GROUP);
            props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            props.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
            props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            thread = new Thread(() -> {
                try (KafkaConsumer<String, String> c =
                        new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
                    c.subscribe(List.of(TOPIC));
                    while (running.get()) {
                        c.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                        c.commitSync();
                        assignment.set(Set.copyOf(c.assignment()));
                    }
                } catch (Throwable t) {
                    failure = t;
                }
            }, name);
            thread.start();
        }

        @Override
        public void close() throws InterruptedException {
            running.set(false);
            thread.join(60_000);
        }
    }

    /** Waits until the members' assignments cover every partition exactly once. */
    private static void awaitExclusive(List<Member> members, int each) throws InterruptedException {
        Clients.await(() -> {
            List<TopicPartition> all = new ArrayList<>();
            for (Member m : members) {
                if (m.failure != null) throw new AssertionError(m.failure);
                if (m.assignment.get().size() != each) return false;
                all.addAll(m.assignment.get());
            }
            return all.size() == PARTITIONS && new HashSet<>(all).size() == PARTITIONS;
        }, Duration.ofSeconds(60), () -> "assignments: " + members.stream().map(m -> m.assignment.get()).toList());
        // Once stable, the ownership stays exclusive for a while (no flapping).
        for (int i = 0; i < 10; i++) {
            Set<TopicPartition> owned = new HashSet<>();
            int total = 0;
            for (Member m : members) {
                owned.addAll(m.assignment.get());
                total += m.assignment.get().size();
            }
            assertEquals(PARTITIONS, total, "a partition owned twice");
            assertEquals(PARTITIONS, owned.size());
            sleep(100);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Test
    void consumersScaleOutAndInUnderLoadWithoutLosingRecords() throws Exception {
        try (Kcoord kcoord = Kcoord.start("consumer-group")) {
            String bootstrap = kcoord.bootstrap();
            Clients.createTopics(bootstrap, PARTITIONS, TOPIC);
            Set<String> seen = ConcurrentHashMap.newKeySet();
            AtomicLong produced = new AtomicLong();
            AtomicBoolean producing = new AtomicBoolean(true);
            Thread producer = new Thread(() -> {
                try (KafkaProducer<String, String> p = Clients.producer(bootstrap)) {
                    while (producing.get()) {
                        long n = produced.get();
                        p.send(new ProducerRecord<>(TOPIC, "k" + n, "v" + n)).get();
                        produced.incrementAndGet();
                        if (n % 50 == 0) sleep(20);
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }, "producer");
            producer.start();

            List<Member> members = new ArrayList<>();
            members.add(new Member(bootstrap, "c1", seen));
            awaitExclusive(members, 6);
            members.add(new Member(bootstrap, "c2", seen));
            members.add(new Member(bootstrap, "c3", seen));
            awaitExclusive(members, 2);
            describeMembers(bootstrap, 3);

            members.remove(2).close();
            members.remove(1).close();
            awaitExclusive(members, 6);
            producing.set(false);
            producer.join();
            long total = produced.get();
            Clients.await(() -> seen.size() == total, Duration.ofSeconds(60),
                    () -> "consumed " + seen.size() + " of " + total);
            members.remove(0).close();

            // Every partition's committed offset is its end: a new consumer resumes there.
            try (Admin admin = Clients.admin(bootstrap)) {
                Map<TopicPartition, OffsetAndMetadata> committed =
                        admin.listConsumerGroupOffsets(GROUP).partitionsToOffsetAndMetadata().get();
                long sum = committed.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
                assertEquals(total, sum, "committed offsets add up to every record");
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(GROUP)).all().get().get(GROUP);
                assertEquals(GroupType.CONSUMER, d.type());
                assertEquals(GroupState.EMPTY, d.groupState());
            }
            Set<String> again = ConcurrentHashMap.newKeySet();
            try (Member resumed = new Member(bootstrap, "c4", again)) {
                awaitExclusive(List.of(resumed), 6);
                sleep(1000);
                assertTrue(again.isEmpty(), "resumed from the committed offsets, re-read " + again.size());
            }
        }
    }

    /** {@code kafka-consumer-groups --describe --members} lists the group's consumers. */
    private static void describeMembers(String bootstrap, int members) {
        Tools.Run run = Tools.inProcess(org.apache.kafka.tools.consumer.group.ConsumerGroupCommand::main,
                "--bootstrap-server", bootstrap, "--describe", "--members", "--group", GROUP);
        assertEquals(0, run.exitCode(), run.toString());
        Map<String, Integer> clients = new HashMap<>();
        for (String line : run.stdout().split("\n")) {
            String[] cells = line.trim().split("\\s+");
            if (cells.length > 3 && cells[0].equals(GROUP)) clients.merge(cells[3], 1, Integer::sum);
        }
        assertEquals(members, clients.size(), run.stdout());
    }
}

package io.kcoord.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kcoord.interop.apps.FilterAppMain;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.GroupState;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Three instances of a Kafka Streams 4.4 app, each in its own JVM, scale out and back in on
 * kcoord while records keep flowing: tasks spread evenly, no task is ever owned by two members
 * in a settled group, nothing is lost, and an instance killed without leaving is fenced after
 * its session timeout and its tasks move.
 */
class ScaleTest {
    private static final String APP = "orders-scale";
    private static final int PARTITIONS = 6;

    private Kcoord kcoord;
    private final List<Process> instances = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        kcoord = Kcoord.start("scale", Kcoord.fastStreamsGroups().toArray(String[]::new));
    }

    @AfterEach
    void stop() throws Exception {
        for (Process p : instances) p.destroyForcibly();
        kcoord.close();
    }

    private Process startInstance(String name) throws Exception {
        Path log = Path.of(System.getProperty("kcoord.logs", "target/kcoord-logs"), APP + "-" + name + ".log");
        Files.createDirectories(log.getParent());
        Process p = Tools.spawnJava(log, FilterAppMain.class.getName(), kcoord.bootstrap(), APP,
                Clients.tempDir(APP + "-" + name).toString());
        instances.add(p);
        return p;
    }

    private static void closeGracefully(Process p) throws Exception {
        try (OutputStream stdin = p.getOutputStream()) {
            stdin.write("close\n".getBytes(StandardCharsets.UTF_8));
        }
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "instance did not close");
    }

    /**
     * Waits until the group is stable with {@code members} members, every member owns what the
     * coordinator targets for it, each owns PARTITIONS / members tasks (give or take one), and
     * every task is owned exactly once.
     */
    private void awaitEvenSpread(Admin admin, int members) throws Exception {
        String[] last = {""};
        Clients.await(() -> {
            StreamsGroupDescription g;
            try {
                g = admin.describeStreamsGroups(List.of(APP)).describedGroups().get(APP)
                        .get(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                last[0] = e.toString();
                return false;
            }
            last[0] = g.toString();
            if (g.groupState() != GroupState.STABLE || g.members().size() != members) return false;
            Map<String, Integer> owners = new TreeMap<>();
            for (StreamsGroupMemberDescription m : g.members()) {
                if (!m.assignment().equals(m.targetAssignment())) return false;
                int owned = 0;
                for (StreamsGroupMemberAssignment.TaskIds t : m.assignment().activeTasks()) {
                    for (int p : t.partitions()) {
                        owners.merge(t.subtopologyId() + "_" + p, 1, Integer::sum);
                        owned++;
                    }
                }
                if (owned < PARTITIONS / members || owned > (PARTITIONS + members - 1) / members) {
                    return false;
                }
            }
            assertTrue(owners.values().stream().allMatch(n -> n == 1), "a task owned twice: " + g);
            return owners.size() == PARTITIONS;
        }, Duration.ofSeconds(90), () -> "an even spread over " + members + " members: " + last[0]);
    }

    @Test
    void three_instances_scale_out_and_in_and_a_killed_one_is_fenced() throws Exception {
        Clients.createTopics(kcoord.bootstrap(), PARTITIONS, "orders", "valid-orders");
        AtomicBoolean producing = new AtomicBoolean(true);
        AtomicInteger sent = new AtomicInteger();
        List<Future<RecordMetadata>> acks = new ArrayList<>();
        Thread producer = new Thread(() -> {
            try (KafkaProducer<String, String> p = Clients.producer(kcoord.bootstrap())) {
                while (producing.get()) {
                    int n = sent.getAndIncrement();
                    synchronized (acks) {
                        acks.add(p.send(new ProducerRecord<>("orders", "order-" + n, "v" + n)));
                    }
                    Thread.sleep(5);
                }
                p.flush();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "orders-producer");
        producer.start();

        try (Admin admin = Clients.admin(kcoord.bootstrap())) {
            Process a = startInstance("a");
            awaitEvenSpread(admin, 1);
            Process b = startInstance("b");
            awaitEvenSpread(admin, 2);
            Process c = startInstance("c");
            awaitEvenSpread(admin, 3);

            closeGracefully(c); // leaves the group: its tasks move at once
            awaitEvenSpread(admin, 2);

            b.destroyForcibly(); // no leave: fenced once its session times out
            b.waitFor(30, TimeUnit.SECONDS);
            awaitEvenSpread(admin, 1);
            assertTrue(a.isAlive());
        } finally {
            producing.set(false);
            producer.join(30_000);
        }
        synchronized (acks) {
            for (Future<RecordMetadata> f : acks) f.get(30, TimeUnit.SECONDS);
        }

        // Every record sent arrives (at least once: a killed instance's uncommitted work is redone).
        int total = sent.get();
        Set<String> seen = new HashSet<>();
        Clients.await(() -> {
            Clients.consume(kcoord.bootstrap(), "valid-orders", Integer.MAX_VALUE, Duration.ofSeconds(2))
                    .forEach(r -> seen.add(r.key()));
            return seen.size() == total;
        }, Duration.ofSeconds(90), () -> seen.size() + " of " + total + " orders arrived");
        assertEquals(total, seen.size());
    }
}

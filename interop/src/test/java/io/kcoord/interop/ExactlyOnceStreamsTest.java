package io.kcoord.interop;


import io.kcoord.interop.apps.EosCountAppMain;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A stateful Kafka Streams 4.4 app with {@code processing.guarantee=exactly_once_v2} on the
 * streams group protocol (groupBy: a repartition topic; count: a store and its changelog), two
 * instances in their own JVMs, while a producer writes a known keyed input: instances are
 * killed with SIGKILL mid-stream three times and restarted on their state directories (so on
 * their process ids, hence their transactional ids), and on kcoord the daemon itself is killed
 * and restarted on its data directory. A read_committed consumer of the output then sees, for
 * every group, the counts 1, 2, ..., n exactly once each and in order (no increment lost, none
 * applied twice), n being the number of input records of that group.
 *
 * <p>Runs on kcoord; {@code -Dinterop.target=kafka} runs it on Kafka 4.4 (without the daemon
 * restart).
 */
class ExactlyOnceStreamsTest {
    private static final String APP = "eos-count";
    private static final int PARTITIONS = 4;
    private static final int GROUPS = 20;
    private static final int RECORDS = 3000;

    private Target target;
    private final Map<String, Process> instances = new HashMap<>();
    private final Map<String, Path> logs = new HashMap<>();
    private final Map<String, Path> stateDirs = new HashMap<>();
    private final List<AutoCloseable> open = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        List<String> settings = new ArrayList<>(Kcoord.fastStreamsGroups());
        settings.add("transaction.state.log.num.partitions=5");
        settings.add("transaction.abort.timed.out.transaction.cleanup.interval.ms=1000");
        target = Target.start("eos-streams", settings);
        Clients.createTopics(target.bootstrap(), PARTITIONS, "eos-in", "eos-out");
    }

    @AfterEach
    void stop() throws Exception {
        for (Process p : instances.values()) p.destroyForcibly();
        for (AutoCloseable c : open) {
            try {
                c.close();
            } catch (Exception ignored) {
                // closing anyway
            }
        }
        target.close();
    }

    private void startInstance(String name) throws Exception {
        Path state = stateDirs.computeIfAbsent(name, n -> {
            try {
                return Clients.tempDir(APP + "-" + n);
            } catch (java.io.IOException e) {
                throw new RuntimeException(e);
            }
        });
        Path log = Path.of(System.getProperty("kcoord.logs", "target/kcoord-logs"),
                APP + "-" + name + "-" + System.nanoTime() + ".log");
        Files.createDirectories(log.getParent());
        logs.put(name, log);
        instances.put(name, Tools.spawnJava(log, EosCountAppMain.class.getName(), target.bootstrap(), APP, state.toString()));
    }

    /** Waits until the instance (this start of it) printed STATE RUNNING. */
    private void awaitRunning(String name) throws Exception {
        Clients.await(() -> {
            try {
                return Files.readString(logs.get(name)).contains("STATE RUNNING");
            } catch (java.io.IOException e) {
                return false;
            }
        }, Duration.ofSeconds(120), () -> "instance " + name + " is not RUNNING; " + target.logTail());
    }

    private void kill(String name) throws Exception {
        Process p = instances.remove(name);
        p.destroyForcibly();
        p.waitFor(30, TimeUnit.SECONDS);
    }

    @Test
    void every_count_is_applied_exactly_once_through_kills_and_restarts() throws Exception {
        startInstance("a");
        startInstance("b");
        awaitRunning("a");
        awaitRunning("b");

        EosCounts counts = new EosCounts(RECORDS, GROUPS);
        counts.startInput(target.bootstrap(), 200);

        // Kill -9 mid-stream, three times, each instance restarted on its own state directory.
        String[] victims = {"a", "b", "a"};
        for (int round = 0; round < victims.length; round++) {
            int threshold = (round + 1) * RECORDS / 5;
            counts.awaitSent(threshold);
            awaitRunning(victims[round]); // killed while it processes
            kill(victims[round]);
            Thread.sleep(1000); // the instance is gone while records keep arriving
            startInstance(victims[round]);
        }
        if (!target.isKafka()) {
            counts.awaitSent(4 * RECORDS / 5);
            target.killAndRestart(); // SIGKILL, then the daemon again on its data directory
        }
        counts.awaitInput();
        awaitRunning("a");
        awaitRunning("b");
        counts.assertCountedExactlyOnce(target.bootstrap(), open, target::logTail);
    }
}

package io.kcoord.interop;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The kcoord binary Cargo built, run as a child process on free loopback ports.
 *
 * <p>The daemon prints one line on stdout once its listeners are bound, e.g. {@code kcoord
 * started: node.id=1 listeners=PLAINTEXT://127.0.0.1:40123,CONTROLLER://127.0.0.1:40124}; the
 * bound addresses are read from it. Its stderr goes to {@code target/kcoord-logs/<name>-N.log}.
 */
public final class Kcoord implements AutoCloseable {
    private static final AtomicInteger STARTED = new AtomicInteger();

    /** What every daemon of these tests starts with; a test's lines with the same key win. */
    private static final Map<String, String> BASE = new LinkedHashMap<>();

    static {
        BASE.put("node.id", "1");
        BASE.put("listeners", "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0");
        BASE.put("controller.listener.names", "CONTROLLER");
        BASE.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        BASE.put("auto.create.topics.enable", "false");
    }

    private final Process process;
    private final Path log;
    private final Map<String, String> listeners;
    private final String id;
    private final Path configFile;

    private Kcoord(Process process, Path log, Map<String, String> listeners, String id, Path configFile) {
        this.process = process;
        this.log = log;
        this.listeners = listeners;
        this.id = id;
        this.configFile = configFile;
    }

    /** Starts a daemon with the base config plus {@code key=value} lines. */
    public static Kcoord start(String name, String... config) throws IOException {
        Map<String, String> props = new LinkedHashMap<>(BASE);
        for (String line : config) {
            int eq = line.indexOf('=');
            if (eq < 0) throw new IllegalArgumentException("not key=value: " + line);
            props.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
        }
        Path logs = Paths.get(System.getProperty("kcoord.logs", "target/kcoord-logs"));
        Files.createDirectories(logs);
        String id = name + "-" + STARTED.incrementAndGet();
        Path configFile = logs.resolve(id + ".properties");
        StringBuilder text = new StringBuilder();
        props.forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
        Files.writeString(configFile, text);
        return launch(id, configFile, logs.resolve(id + ".log"));
    }

    private static Kcoord launch(String id, Path configFile, Path log) throws IOException {
        ProcessBuilder builder = new ProcessBuilder(binary().toString(), configFile.toString());
        builder.redirectError(log.toFile());
        Process process = builder.start();
        Map<String, String> listeners = awaitStartupLine(process, log);
        return new Kcoord(process, log, listeners, id, configFile);
    }

    /**
     * A daemon that {@link #killAndRestart} can bring back where it was: its listeners on free
     * ports chosen here (not 0, so a restart binds the same ones and clients find it again) and
     * everything it keeps (metadata log, partitions, coordinator shards) under {@code dataDir}
     * ({@code log.dirs}).
     */
    public static Kcoord startRestartable(String name, Path dataDir, String... config) throws IOException {
        List<String> lines = new ArrayList<>();
        lines.add("listeners=PLAINTEXT://127.0.0.1:" + KafkaBroker.freePort()
                + ",CONTROLLER://127.0.0.1:" + KafkaBroker.freePort());
        lines.add("log.dirs=" + dataDir);
        lines.addAll(List.of(config));
        return start(name, lines.toArray(String[]::new));
    }

    /**
     * Kills the daemon without a goodbye (SIGKILL) and starts the binary again on the same
     * configuration file: the same ports and data directories if it was started by {@link
     * #startRestartable}. Its stderr goes on in a new log file ({@code <name>-N.restart-M.log}).
     */
    public Kcoord killAndRestart() throws IOException, InterruptedException {
        kill();
        Path log = this.log.resolveSibling(id + ".restart-" + STARTED.incrementAndGet() + ".log");
        return launch(id, configFile, log);
    }

    static Path binary() {
        String path = System.getProperty("kcoord.bin", System.getenv("KCOORD_BIN"));
        if (path == null) path = "../target/debug/kcoord";
        Path binary = Paths.get(path).toAbsolutePath().normalize();
        if (!Files.isExecutable(binary)) {
            throw new IllegalStateException(
                    "no kcoord binary at " + binary + " (run `cargo build --bin kcoord` first)");
        }
        return binary;
    }

    private static Map<String, String> awaitStartupLine(Process process, Path log)
            throws IOException {
        BufferedReader stdout = new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> {
            try {
                return stdout.readLine();
            } catch (IOException e) {
                return null;
            }
        });
        String started;
        try {
            started = line.get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            started = null;
        }
        if (started == null || !started.startsWith("kcoord started:")) {
            process.destroyForcibly();
            throw new IllegalStateException("kcoord did not start (stdout: " + started
                    + "); stderr:\n" + tail(log));
        }
        // Keep draining stdout so the daemon never blocks on a full pipe.
        Thread drain = new Thread(() -> {
            try {
                while (stdout.readLine() != null) { /* discard */ }
            } catch (IOException ignored) {
                // the process is gone
            }
        }, "kcoord-stdout");
        drain.setDaemon(true);
        drain.start();

        Map<String, String> listeners = new LinkedHashMap<>();
        // The listeners are one space-separated field; `http=...` may follow it.
        String list = started.replaceAll(".*listeners=", "").trim().split(" ")[0];
        for (String entry : list.split(",")) {
            int sep = entry.indexOf("://");
            listeners.put(entry.substring(0, sep), entry.substring(sep + 3));
        }
        return listeners;
    }

    /** host:port of the broker listener, for {@code bootstrap.servers}. */
    public String bootstrap() {
        return listeners.get("PLAINTEXT");
    }

    /** host:port of the listener named {@code name} (as in {@code listeners}, upper case). */
    public String listener(String name) {
        String address = listeners.get(name);
        if (address == null) throw new IllegalArgumentException("no listener " + name + " in " + listeners);
        return address;
    }

    /** host:port of the controller listener. */
    public String controller() {
        return listeners.get("CONTROLLER");
    }

    public Path log() {
        return log;
    }

    /** The daemon's stderr so far (the end of it), for assertion messages. */
    public String logTail() {
        return tail(log);
    }

    private static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 60), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    /** Kills the daemon without a goodbye (SIGKILL). */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    /** Stops the daemon with SIGTERM and waits for it. */
    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(40, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** {@code key=value} lines that make streams groups quick, for tests. */
    public static List<String> fastStreamsGroups() {
        List<String> lines = new ArrayList<>();
        lines.add("group.streams.initial.rebalance.delay.ms=0");
        lines.add("group.streams.min.session.timeout.ms=1000");
        lines.add("group.streams.session.timeout.ms=6000");
        lines.add("group.streams.min.heartbeat.interval.ms=100");
        lines.add("group.streams.heartbeat.interval.ms=500");
        return lines;
    }
}

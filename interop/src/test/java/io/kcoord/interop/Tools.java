package io.kcoord.interop;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.kafka.common.utils.internals.Exit;

/** Command-line tools run as child processes: kcoord's Rust CLI and Kafka 4.4's own tools. */
public final class Tools {
    private Tools() {}

    /** What a tool printed and how it exited. */
    public record Run(int exitCode, String stdout, String stderr) {
        @Override
        public String toString() {
            return "exit " + exitCode + "\n--- stdout\n" + stdout + "--- stderr\n" + stderr;
        }
    }

    /** kcoord's {@code kafka-streams-groups} (crates/streams-groups), built next to the daemon. */
    public static Run kcoordStreamsGroups(String... args) throws Exception {
        Path cli = Kcoord.binary().resolveSibling("kafka-streams-groups");
        List<String> command = new ArrayList<>();
        command.add(cli.toString());
        command.addAll(List.of(args));
        return run(command);
    }

    /** Apache Kafka 4.4's {@code kafka-streams-groups.sh}: its main class in a child JVM. */
    public static Run kafkaStreamsGroups(String... args) throws Exception {
        return java("org.apache.kafka.tools.streams.StreamsGroupCommand", args);
    }

    /** Kafka 4.4's {@code kafka-acls.sh} ({@code org.apache.kafka.tools.AclCommand}), in this JVM. */
    public static Run kafkaAcls(String... args) {
        return inProcess(org.apache.kafka.tools.AclCommand::main, args);
    }

    /**
     * {@code kafka-acls} at {@code bootstrap} with the client settings in {@code commandConfig}
     * (an admin's); fails the test unless it succeeds.
     */
    public static void kafkaAclsAsAdmin(String bootstrap, java.nio.file.Path commandConfig, String... args) {
        List<String> all = new ArrayList<>(List.of("--bootstrap-server", bootstrap, "--command-config",
                commandConfig.toString()));
        all.addAll(List.of(args));
        Run run = kafkaAcls(all.toArray(String[]::new));
        org.junit.jupiter.api.Assertions.assertEquals(0, run.exitCode(), run.toString());
        org.junit.jupiter.api.Assertions.assertFalse(run.stdout().contains("Error while executing ACL command"),
                run.toString());
    }

    /** Kafka 4.4's {@code kafka-configs.sh} ({@code org.apache.kafka.tools.ConfigCommand}), in this JVM. */
    public static Run kafkaConfigs(String... args) {
        return inProcess(org.apache.kafka.tools.ConfigCommand::main, args);
    }

    /**
     * Kafka 4.4's {@code kafka-topics.sh} ({@code org.apache.kafka.tools.TopicCommand}) in a child
     * JVM: its main catches the exception {@link #inProcess} ends a tool with.
     */
    public static Run kafkaTopics(String... args) throws Exception {
        return java("org.apache.kafka.tools.TopicCommand", args);
    }

    /** Kafka 4.4's {@code kafka-log-dirs.sh} ({@code org.apache.kafka.tools.LogDirsCommand}), in this JVM. */
    public static Run kafkaLogDirs(String... args) {
        return inProcess(org.apache.kafka.tools.LogDirsCommand::main, args);
    }

    /** Kafka 4.4's {@code kafka-transactions.sh} ({@code org.apache.kafka.tools.TransactionsCommand}), in this JVM. */
    public static Run kafkaTransactions(String... args) {
        return inProcess(a -> {
            try {
                org.apache.kafka.tools.TransactionsCommand.main(a);
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }, args);
    }

    /** Thrown by Kafka's {@link Exit} while a tool runs in this JVM, to end its main. */
    private static final class ToolExit extends RuntimeException {
        final int status;

        ToolExit(int status) {
            super("tool exited with " + status, null, false, false);
            this.status = status;
        }
    }

    /**
     * A Kafka tool's {@code main} run in this JVM, a second where a child JVM takes several:
     * Kafka's tools end through {@link Exit}, which is pointed here at an exception for the
     * run, and they print with {@code System.out}/{@code System.err}, which are captured (one
     * tool at a time). Log lines do not mix in: log4j's console appender holds the real streams.
     */
    public static synchronized Run inProcess(Consumer<String[]> main, String... args) {
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        int status = 0;
        Exit.setExitProcedure((code, message) -> {
            throw new ToolExit(code);
        });
        System.setOut(new PrintStream(stdout, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(stderr, true, StandardCharsets.UTF_8));
        try {
            main.accept(args);
        } catch (ToolExit e) {
            status = e.status;
        } finally {
            System.out.flush();
            System.err.flush();
            System.setOut(out);
            System.setErr(err);
            Exit.setExitProcedure(NoExit::refuseExit);
        }
        return new Run(status, stdout.toString(StandardCharsets.UTF_8),
                stderr.toString(StandardCharsets.UTF_8));
    }

    /** A main class of the test classpath in a child JVM (Kafka's tools call System.exit). */
    public static Run java(String mainClass, String... args) throws Exception {
        List<String> jvmOptions = List.of("-Dlog4j2.configurationFile=log4j2-tools.properties");
        return run(javaCommand(System.getProperty("java.class.path"), jvmOptions, mainClass, args));
    }

    /**
     * A main class started in a child JVM on {@code classpath} and left running; its stdout and
     * stderr go to {@code log}.
     */
    public static Process spawnJavaOn(String classpath, java.nio.file.Path log, String mainClass,
            String... args) throws IOException {
        // A child killed with SIGKILL (the tests kill Streams apps) leaves its temp files, RocksDB's
        // 15 MB native library among them: they stay in the build directory, not in /tmp.
        java.nio.file.Path tmp = Paths.get("target", "child-tmp").toAbsolutePath();
        java.nio.file.Files.createDirectories(tmp);
        List<String> jvmOptions = List.of("-Djava.io.tmpdir=" + tmp);
        return new ProcessBuilder(javaCommand(classpath, jvmOptions, mainClass, args))
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
    }

    /** A main class of the test classpath started in a child JVM; see above. */
    public static Process spawnJava(java.nio.file.Path log, String mainClass, String... args)
            throws IOException {
        return spawnJavaOn(System.getProperty("java.class.path"), log, mainClass, args);
    }

    /** This JVM's java with {@code jvmOptions}, running {@code mainClass} on {@code classpath}. */
    private static List<String> javaCommand(String classpath, List<String> jvmOptions,
            String mainClass, String... args) {
        List<String> command = new ArrayList<>();
        command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-cp");
        command.add(classpath);
        command.addAll(jvmOptions);
        command.add(mainClass);
        command.addAll(List.of(args));
        return command;
    }

    static Run run(List<String> command) throws IOException, InterruptedException {
        File out = File.createTempFile("tool", ".out");
        File err = File.createTempFile("tool", ".err");
        try {
            Process process = new ProcessBuilder(command)
                    .redirectOutput(out)
                    .redirectError(err)
                    .start();
            if (!process.waitFor(120, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("timed out: " + command);
            }
            return new Run(process.exitValue(),
                    Files.readString(out.toPath(), StandardCharsets.UTF_8),
                    Files.readString(err.toPath(), StandardCharsets.UTF_8));
        } finally {
            out.delete();
            err.delete();
        }
    }
}

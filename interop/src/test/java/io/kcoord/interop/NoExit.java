package io.kcoord.interop;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import org.apache.kafka.common.utils.internals.Exit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Keeps Kafka code running in this JVM (the brokers of the differential suite, tools run in
 * process) from ending the test JVM: Kafka's fatal-fault handlers and tools end the process
 * through {@link Exit}, which surefire only reports as "the forked VM terminated without
 * properly saying goodbye", with no test and no cause named. Here such a call is written, with
 * the calling thread's stack, to standard error and to {@code kcoord-logs/jvm-exit.txt}, and
 * becomes an exception on that thread; the test class during which it happened fails, naming
 * the call, even when the thread that made it was not the test's.
 * Registered for every test class through JUnit's extension auto-detection (the pom turns it
 * on); {@link Tools#inProcess} swaps in its own procedure for a tool's run and puts this one
 * back.
 */
public final class NoExit implements BeforeAllCallback, AfterAllCallback {
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(NoExit.class);
    private static final AtomicInteger REFUSALS = new AtomicInteger();
    private static volatile String lastRefusal = "";
    private static volatile boolean installed;

    @Override
    public void beforeAll(ExtensionContext context) {
        install();
        context.getStore(NAMESPACE).put("refusals", REFUSALS.get());
    }

    @Override
    public void afterAll(ExtensionContext context) {
        Integer before = context.getStore(NAMESPACE).get("refusals", Integer.class);
        if (before != null && REFUSALS.get() != before) {
            throw new AssertionError((REFUSALS.get() - before) + " call(s) to end the JVM during this class, the last: "
                    + lastRefusal);
        }
    }

    /** Points Kafka's exit and halt here; once per JVM. */
    public static synchronized void install() {
        if (installed) return;
        Exit.setExitProcedure(NoExit::refuseExit);
        Exit.setHaltProcedure(NoExit::refuseHalt);
        installed = true;
    }

    /** The exit procedure outside a tool's run. */
    static void refuseExit(int status, String message) {
        refuse("exit", status, message);
    }

    private static void refuseHalt(int status, String message) {
        refuse("halt", status, message);
    }

    private static void refuse(String how, int status, String message) {
        IllegalStateException e = new IllegalStateException("Kafka code asked the test JVM to " + how
                + " with status " + status + " on thread " + Thread.currentThread().getName() + ": " + message);
        StringWriter trace = new StringWriter();
        e.printStackTrace(new PrintWriter(trace));
        String entry = Instant.now() + " " + trace;
        lastRefusal = e.getMessage();
        REFUSALS.incrementAndGet();
        System.err.println(entry);
        try {
            Path dir = Path.of(System.getProperty("kcoord.logs", "target/kcoord-logs"));
            Files.createDirectories(dir);
            Files.writeString(dir.resolve("jvm-exit.txt"), entry + System.lineSeparator(), StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException ignored) {
            // Standard error has it already.
        }
        throw e;
    }
}

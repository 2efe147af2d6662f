package io.kcoord.interop;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import javax.security.auth.x500.X500Principal;

/**
 * Test certificates made with OpenSSL in a temp directory: first the commands of
 * {@code docs/operations.md} ("Running locked down", between its {@code secured-certs} markers),
 * which make {@code ca.pem},
 * {@code server.pem} (the daemon's PKCS#8 key and certificate for localhost and 127.0.0.1) and
 * {@code broker.pem}; then client certificates with the same commands, signed by that CA or by
 * a CA of their own that nobody trusts.
 */
public final class Certs {
    /** {@code <temp>/config/certs}, where the guide's commands leave their files. */
    private final Path dir;

    private Certs(Path dir) {
        this.dir = dir;
    }

    /** The repository's root (the pom passes it; from interop/ it is the parent). */
    public static Path repositoryRoot() {
        return Paths.get(System.getProperty("kcoord.root", "..")).toAbsolutePath().normalize();
    }

    /** Runs the guide's certificate commands as written, from a new temp directory. */
    public static Certs fromOperationsGuide() throws Exception {
        Path root = Clients.tempDir("kcoord-certs");
        bash(root, guideCommands(), List.of());
        return new Certs(root.resolve("config").resolve("certs"));
    }

    /** The secured-certs block of docs/operations.md, without its code fences. */
    static String guideCommands() throws IOException {
        String guide = Files.readString(operationsGuide(), StandardCharsets.UTF_8);
        String[] begin = guide.split("<!-- secured-certs:begin -->", 2);
        if (begin.length < 2) throw new IllegalStateException("docs/operations.md has no secured-certs block");
        String block = begin[1].split("<!-- secured-certs:end -->", 2)[0];
        StringBuilder out = new StringBuilder();
        for (String line : block.split("\n")) {
            if (!line.startsWith("```")) out.append(line).append('\n');
        }
        return out.toString();
    }

    /** {@code docs/operations.md}, whose "Running locked down" the secured tests follow. */
    static Path operationsGuide() {
        return repositoryRoot().resolve("docs").resolve("operations.md");
    }

    /** The CA that signed the daemon's certificate and signs clients' ({@code ca.pem}). */
    public Path ca() {
        return dir.resolve("ca.pem");
    }

    /** The directory the guide's commands wrote to ({@code config/certs}). */
    public Path dir() {
        return dir;
    }

    /**
     * A client certificate for {@code subject} (OpenSSL's {@code -subj} syntax, most general
     * RDN first; {@code +} joins the attributes of a multi-valued RDN) signed by the trusted CA,
     * made as docs/operations.md makes broker.pem. Returns the PEM key store (PKCS#8 key and the
     * certificate); the certificate alone is {@code <name>.crt} beside it.
     */
    public Path client(String name, String subject) throws Exception {
        return signed(name, subject, "ca");
    }

    /** The same, signed by a CA of its own ({@code rogue-ca.pem}) that the daemon does not trust. */
    public Path untrustedClient(String name, String subject) throws Exception {
        if (!Files.exists(dir.resolve("rogue-ca.pem"))) {
            bash(dir, "openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj '/CN=rogue CA' "
                    + "-keyout rogue-ca.key -out rogue-ca.pem\n", List.of());
        }
        return signed(name, subject, "rogue-ca");
    }

    /** A CA certificate the daemon's certificate is not signed by, for a client's truststore. */
    public Path rogueCa() throws Exception {
        untrustedClient("rogue-client", "/CN=rogue client");
        return dir.resolve("rogue-ca.pem");
    }

    private Path signed(String name, String subject, String ca) throws Exception {
        String script = "openssl req -newkey rsa:2048 -nodes -utf8 -multivalue-rdn -subj \"$SUBJECT\" "
                + "-keyout \"$NAME.key\" -out \"$NAME.csr\"\n"
                + "openssl x509 -req -in \"$NAME.csr\" -CA \"$CA.pem\" -CAkey \"$CA.key\" -CAcreateserial "
                + "-days 365 -extfile <(printf \"extendedKeyUsage=clientAuth\") -out \"$NAME.crt\"\n"
                + "cat \"$NAME.key\" \"$NAME.crt\" > \"$NAME.pem\"\n";
        bash(dir, script, List.of("NAME=" + name, "SUBJECT=" + subject, "CA=" + ca));
        return dir.resolve(name + ".pem");
    }

    /** The subject of {@code <name>.crt} as Java (and so Kafka's broker) names it: {@code X500Principal.getName()}. */
    public String javaSubjectName(String name) throws Exception {
        try (InputStream in = Files.newInputStream(dir.resolve(name + ".crt"))) {
            X509Certificate cert = (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
            return cert.getSubjectX500Principal().getName(X500Principal.RFC2253);
        }
    }

    /**
     * A Kafka client's settings for an SSL listener: the CA as its PEM truststore and, unless
     * {@code keyStore} is null, that PEM file as its key store.
     */
    public Properties ssl(Path keyStore) {
        return ssl(keyStore, ca());
    }

    /** The same with another truststore. */
    public static Properties ssl(Path keyStore, Path trustStore) {
        Properties props = new Properties();
        props.put("security.protocol", "SSL");
        props.put("ssl.truststore.type", "PEM");
        props.put("ssl.truststore.location", trustStore.toString());
        if (keyStore != null) {
            props.put("ssl.keystore.type", "PEM");
            props.put("ssl.keystore.location", keyStore.toString());
        }
        return props;
    }

    /** Runs {@code script} with bash (strict mode) in {@code cwd}; fails with its stderr. */
    private static void bash(Path cwd, String script, List<String> env) throws Exception {
        List<String> command = new ArrayList<>(List.of("bash", "-c", "set -euo pipefail\n" + script));
        ProcessBuilder builder = new ProcessBuilder(command).directory(cwd.toFile());
        for (String pair : env) {
            int eq = pair.indexOf('=');
            builder.environment().put(pair.substring(0, eq), pair.substring(eq + 1));
        }
        Path err = Files.createTempFile("openssl", ".err");
        builder.redirectErrorStream(true).redirectOutput(err.toFile());
        Process process = builder.start();
        try {
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("timed out: " + script);
            }
            if (process.exitValue() != 0) {
                throw new AssertionError("certificate commands failed (exit " + process.exitValue() + "):\n"
                        + script + "\n" + Files.readString(err, StandardCharsets.UTF_8));
            }
        } finally {
            Files.deleteIfExists(err);
        }
    }
}

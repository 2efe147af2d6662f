package io.kcoord.interop.diff;

import java.util.LinkedHashMap;
import java.util.Map;

/** The settings of the server pairs (both servers of a pair get the same). */
final class Settings {
    private Settings() {}

    static final String PLUGIN = "org.apache.kafka.server.streams.InMemoryTopologyDescriptionPlugin";

    /**
     * Kafka's defaults (45 s sessions, 5 s heartbeats, no standbys), except: no initial
     * rebalance delay and no assignment interval (streams and consumer groups), so every
     * assignment is computed by the heartbeat that triggers it (deterministic), and the
     * in-memory topology description plugin.
     */
    static final Map<String, String> MAIN = new LinkedHashMap<>();

    /**
     * Short sessions (expiry within seconds; consumer groups' too), one standby replica, Kafka's
     * initial rebalance delay (shortened to 2 s) and no plugin.
     */
    static final Map<String, String> ALT = new LinkedHashMap<>();

    /**
     * Kafka's StandardAuthorizer with {@code User:ANONYMOUS} a super user (every client of the
     * suite, and Kafka's own broker-to-controller connection, is ANONYMOUS on PLAINTEXT), for
     * the ACL and SCRAM scenarios.
     */
    static final Map<String, String> SECURED = new LinkedHashMap<>();

    static Map<String, String> of(Scenario.Pair pair) {
        return switch (pair) {
            case MAIN -> MAIN;
            case ALT -> ALT;
            case SECURED -> SECURED;
        };
    }

    static {
        SECURED.put("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
        SECURED.put("super.users", "User:ANONYMOUS");

        MAIN.put("group.initial.rebalance.delay.ms", "0");
        MAIN.put("group.streams.session.timeout.ms", "45000");
        MAIN.put("group.streams.heartbeat.interval.ms", "5000");
        MAIN.put("group.streams.initial.rebalance.delay.ms", "0");
        MAIN.put("group.streams.assignment.interval.ms", "0");
        MAIN.put("group.streams.num.standby.replicas", "0");
        MAIN.put("group.streams.topology.description.plugin.class", PLUGIN);
        MAIN.put("group.consumer.assignment.interval.ms", "0");

        ALT.put("group.initial.rebalance.delay.ms", "2000");
        ALT.put("group.min.session.timeout.ms", "1000");
        ALT.put("group.streams.min.session.timeout.ms", "1000");
        ALT.put("group.streams.session.timeout.ms", "4000");
        ALT.put("group.streams.min.heartbeat.interval.ms", "500");
        ALT.put("group.streams.heartbeat.interval.ms", "1000");
        ALT.put("group.streams.initial.rebalance.delay.ms", "2000");
        ALT.put("group.streams.assignment.interval.ms", "0");
        ALT.put("group.streams.num.standby.replicas", "1");
        ALT.put("group.consumer.assignment.interval.ms", "0");
        ALT.put("group.consumer.min.session.timeout.ms", "1000");
        ALT.put("group.consumer.session.timeout.ms", "3000");
        ALT.put("group.consumer.min.heartbeat.interval.ms", "500");
        ALT.put("group.consumer.heartbeat.interval.ms", "1000");
    }
}

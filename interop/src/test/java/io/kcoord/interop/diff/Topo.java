package io.kcoord.interop.diff;

import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData;
import org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData.CopartitionGroup;
import org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData.Subtopology;
import org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData.TopicInfo;

/** Small builder of the heartbeat's Topology field. */
final class Topo {
    private final int epoch;
    private final List<Subtopology> subtopologies = new ArrayList<>();

    private Topo(int epoch) {
        this.epoch = epoch;
    }

    static Topo epoch(int epoch) {
        return new Topo(epoch);
    }

    /** One subtopology "0" reading {@code sources}. */
    static StreamsGroupHeartbeatRequestData.Topology simple(String... sources) {
        return epoch(0).sub("0", List.of(sources)).build();
    }

    Topo sub(String id, List<String> sources) {
        subtopologies.add(new Subtopology().setSubtopologyId(id).setSourceTopics(new ArrayList<>(sources)));
        return this;
    }

    /** Adds a changelog topic (undefined partition count) to the last subtopology. */
    Topo changelog(String topic) {
        last().stateChangelogTopics().add(new TopicInfo().setName(topic));
        return this;
    }

    /** Adds a repartition sink topic to the last subtopology. */
    Topo repartitionSink(String topic) {
        last().repartitionSinkTopics().add(topic);
        return this;
    }

    /** Adds a repartition source topic (0 = undefined partition count) to the last subtopology. */
    Topo repartitionSource(String topic, int partitions) {
        last().repartitionSourceTopics().add(new TopicInfo().setName(topic).setPartitions(partitions));
        return this;
    }

    /** A copartition group of the last subtopology, by indexes into its source / repartition source topics. */
    Topo copartition(List<Short> sourceIdx, List<Short> repartitionIdx) {
        last().copartitionGroups().add(new CopartitionGroup()
                .setSourceTopics(new ArrayList<>(sourceIdx))
                .setRepartitionSourceTopics(new ArrayList<>(repartitionIdx)));
        return this;
    }

    private Subtopology last() {
        return subtopologies.get(subtopologies.size() - 1);
    }

    StreamsGroupHeartbeatRequestData.Topology build() {
        return new StreamsGroupHeartbeatRequestData.Topology().setEpoch(epoch)
                .setSubtopologies(new ArrayList<>(subtopologies));
    }
}

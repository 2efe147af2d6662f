package io.kcoord.interop.diff;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.DeleteGroupsRequestData;
import org.apache.kafka.common.message.DescribeGroupsRequestData;
import org.apache.kafka.common.message.FindCoordinatorRequestData;
import org.apache.kafka.common.message.ListGroupsRequestData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.OffsetCommitRequestData;
import org.apache.kafka.common.message.OffsetDeleteRequestData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.message.StreamsGroupDescribeRequestData;
import org.apache.kafka.common.message.StreamsGroupTopologyDescriptionUpdateRequestData;
import org.apache.kafka.common.message.StreamsGroupTopologyDescriptionUpdateRequestData.TopologyDescription;
import org.apache.kafka.common.message.StreamsGroupTopologyDescriptionUpdateRequestData.TopologyDescriptionNode;
import org.apache.kafka.common.message.StreamsGroupTopologyDescriptionUpdateRequestData.TopologyDescriptionSubtopology;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.ApiVersionsRequest;
import org.apache.kafka.common.requests.CreateTopicsRequest;
import org.apache.kafka.common.requests.DeleteGroupsRequest;
import org.apache.kafka.common.requests.DescribeGroupsRequest;
import org.apache.kafka.common.requests.FindCoordinatorRequest;
import org.apache.kafka.common.requests.ListGroupsRequest;
import org.apache.kafka.common.requests.MetadataRequest;
import org.apache.kafka.common.requests.OffsetCommitRequest;
import org.apache.kafka.common.requests.OffsetDeleteRequest;
import org.apache.kafka.common.requests.OffsetFetchRequest;
import org.apache.kafka.common.requests.StreamsGroupDescribeRequest;
import org.apache.kafka.common.requests.StreamsGroupTopologyDescriptionUpdateRequest;

/** Builders of the requests the scenarios send, over Kafka's own *RequestData classes. */
final class Req {
    private Req() {}

    static AbstractRequest.Builder<?> createTopics(Map<String, Integer> topics) {
        CreateTopicsRequestData.CreatableTopicCollection c = new CreateTopicsRequestData.CreatableTopicCollection();
        topics.forEach((name, partitions) -> c.add(new CreateTopicsRequestData.CreatableTopic()
                .setName(name).setNumPartitions(partitions).setReplicationFactor((short) 1)));
        return new CreateTopicsRequest.Builder(new CreateTopicsRequestData().setTopics(c).setTimeoutMs(30_000));
    }

    static AbstractRequest.Builder<?> metadata(String... topics) {
        MetadataRequestData data = new MetadataRequestData().setAllowAutoTopicCreation(false);
        List<MetadataRequestData.MetadataRequestTopic> list = new ArrayList<>();
        for (String t : topics) list.add(new MetadataRequestData.MetadataRequestTopic().setName(t));
        data.setTopics(list);
        return new MetadataRequest.Builder(data);
    }

    static AbstractRequest.Builder<?> describe(boolean includeTopology, String... groups) {
        return new StreamsGroupDescribeRequest.Builder(new StreamsGroupDescribeRequestData()
                .setGroupIds(List.of(groups)).setIncludeTopologyDescription(includeTopology));
    }

    static AbstractRequest.Builder<?> consumerDescribe(boolean operations, String... groups) {
        return new org.apache.kafka.common.requests.ConsumerGroupDescribeRequest.Builder(
                new org.apache.kafka.common.message.ConsumerGroupDescribeRequestData()
                        .setGroupIds(List.of(groups)).setIncludeAuthorizedOperations(operations));
    }

    static AbstractRequest.Builder<?> listGroups(List<String> states, List<String> types) {
        return new ListGroupsRequest.Builder(new ListGroupsRequestData()
                .setStatesFilter(states).setTypesFilter(types));
    }

    static AbstractRequest.Builder<?> deleteGroups(String... groups) {
        return new DeleteGroupsRequest.Builder(new DeleteGroupsRequestData().setGroupsNames(List.of(groups)));
    }

    static AbstractRequest.Builder<?> describeGroups(String... groups) {
        return new DescribeGroupsRequest.Builder(new DescribeGroupsRequestData().setGroups(List.of(groups)));
    }

    static AbstractRequest.Builder<?> findCoordinator(String... groups) {
        return new FindCoordinatorRequest.Builder(new FindCoordinatorRequestData()
                .setKeyType((byte) 0).setCoordinatorKeys(List.of(groups)));
    }

    static AbstractRequest.Builder<?> apiVersions() {
        return new ApiVersionsRequest.Builder();
    }

    /** OffsetCommit (by topic name, v9): {@code offsets} are topic -> partition -> offset. */
    static AbstractRequest.Builder<?> commit(String group, String memberId, int epoch,
            Map<String, Map<Integer, Long>> offsets) {
        List<OffsetCommitRequestData.OffsetCommitRequestTopic> topics = new ArrayList<>();
        offsets.forEach((topic, parts) -> {
            List<OffsetCommitRequestData.OffsetCommitRequestPartition> ps = new ArrayList<>();
            parts.forEach((p, o) -> ps.add(new OffsetCommitRequestData.OffsetCommitRequestPartition()
                    .setPartitionIndex(p).setCommittedOffset(o).setCommittedMetadata("m" + o)));
            topics.add(new OffsetCommitRequestData.OffsetCommitRequestTopic().setName(topic).setPartitions(ps));
        });
        return OffsetCommitRequest.Builder.forTopicNames(new OffsetCommitRequestData()
                .setGroupId(group).setMemberId(memberId).setGenerationIdOrMemberEpoch(epoch).setTopics(topics));
    }

    /** OffsetFetch in the multi-group form (v8+, names up to v9); null topics = all. */
    static AbstractRequest.Builder<?> fetch(String group, String memberId, int epoch,
            Map<String, List<Integer>> topics) {
        List<OffsetFetchRequestData.OffsetFetchRequestTopics> ts = null;
        if (topics != null) {
            ts = new ArrayList<>();
            for (Map.Entry<String, List<Integer>> e : topics.entrySet()) {
                ts.add(new OffsetFetchRequestData.OffsetFetchRequestTopics().setName(e.getKey())
                        .setPartitionIndexes(new ArrayList<>(e.getValue())));
            }
        }
        OffsetFetchRequestData.OffsetFetchRequestGroup g = new OffsetFetchRequestData.OffsetFetchRequestGroup()
                .setGroupId(group).setMemberId(memberId).setMemberEpoch(epoch).setTopics(ts);
        return OffsetFetchRequest.Builder.forTopicNames(new OffsetFetchRequestData()
                .setGroups(List.of(g)).setRequireStable(false), false);
    }

    static AbstractRequest.Builder<?> offsetDelete(String group, String topic, int... partitions) {
        OffsetDeleteRequestData.OffsetDeleteRequestTopicCollection c = new OffsetDeleteRequestData.OffsetDeleteRequestTopicCollection();
        List<OffsetDeleteRequestData.OffsetDeleteRequestPartition> ps = new ArrayList<>();
        for (int p : partitions) ps.add(new OffsetDeleteRequestData.OffsetDeleteRequestPartition().setPartitionIndex(p));
        c.add(new OffsetDeleteRequestData.OffsetDeleteRequestTopic().setName(topic).setPartitions(ps));
        return new OffsetDeleteRequest.Builder(new OffsetDeleteRequestData().setGroupId(group).setTopics(c));
    }

    /** Kafka 4.4's push (key 93) of a one-subtopology description: source -> filter -> sink. */
    static AbstractRequest.Builder<?> push(String group, String memberId, int topologyEpoch, String source, String sink) {
        List<TopologyDescriptionNode> nodes = new ArrayList<>();
        nodes.add(new TopologyDescriptionNode().setName("KSTREAM-SOURCE-0000000000").setNodeType((byte) 1)
                .setSourceTopics(List.of(source)).setStores(List.of())
                .setSuccessors(List.of("KSTREAM-FILTER-0000000001")));
        nodes.add(new TopologyDescriptionNode().setName("KSTREAM-FILTER-0000000001").setNodeType((byte) 2)
                .setSourceTopics(List.of()).setStores(List.of())
                .setSuccessors(List.of("KSTREAM-SINK-0000000002")));
        nodes.add(new TopologyDescriptionNode().setName("KSTREAM-SINK-0000000002").setNodeType((byte) 3)
                .setSourceTopics(List.of()).setSinkTopic(sink).setStores(List.of()).setSuccessors(List.of()));
        TopologyDescription description = new TopologyDescription()
                .setSubtopologies(List.of(new TopologyDescriptionSubtopology().setSubtopologyId("0").setNodes(nodes)))
                .setGlobalStores(List.of());
        return new StreamsGroupTopologyDescriptionUpdateRequest.Builder(
                new StreamsGroupTopologyDescriptionUpdateRequestData().setGroupId(group).setMemberId(memberId)
                        .setTopologyEpoch(topologyEpoch).setTopologyDescription(description));
    }
}

package io.kvoffload.testing;

import io.kvoffload.KvSequence;
import io.kvoffload.internal.kvswap.GroupLayouts;
import io.kvoffload.internal.sequence.SequenceAccess;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.ClusterPlan;
import io.kvoffload.internal.storage.EntryChecksum;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.internal.swarm.MedoidIndex;
import io.kvoffload.internal.swarm.SwarmLayouts;

/** A sequence's layouts and internals as tests inspect them (through its hooks, not its public API). */
public final class Layouts {
    private Layouts() {}

    public static ClusterLayout clusterLayout(KvSequence s, int layer) {
        return SwarmLayouts.of(SequenceAccess.of(s)).layout(layer);
    }

    public static GroupLayout groupLayout(KvSequence s, int layer) {
        return GroupLayouts.of(SequenceAccess.of(s)).layout(layer);
    }

    public static MedoidIndex medoidIndex(KvSequence s, int layer) {
        return SwarmLayouts.of(SequenceAccess.of(s)).medoidIndex(layer);
    }

    public static void applyClusterPlan(KvSequence s, int layer, ClusterPlan plan) {
        SwarmLayouts.of(SequenceAccess.of(s)).apply(layer, plan);
    }

    public static void extendClusters(KvSequence s, int layer, ClusterLayout grown) {
        SwarmLayouts l = SwarmLayouts.of(SequenceAccess.of(s));
        l.extend(layer, grown, l.medoidIndex(layer));
    }

    public static EntryChecksum entryChecksum(KvSequence s) {
        return SequenceAccess.of(s).checksum();
    }

    public static Store store(KvSequence s) {
        return SequenceAccess.of(s).store();
    }
}

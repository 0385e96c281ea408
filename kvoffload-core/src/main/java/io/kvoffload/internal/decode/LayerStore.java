package io.kvoffload.internal.decode;

import io.kvoffload.DType;
import io.kvoffload.KvSequence;
import io.kvoffload.internal.kvswap.CompressedKCache;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.EntryChecksum;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.internal.swarm.MedoidIndex;
import io.kvoffload.strategy.LayerKv;
import java.util.function.Function;

/**
 * What a layer fetcher may ask of the sequence it decodes, without the sequence's package-private
 * API leaking into the public one: its store, its layouts and the hooks through which online
 * maintenance grows them. Implemented over {@link KvSequence} by the decoder.
 */
public interface LayerStore {
    /** The public handle (reads, shape, token counts). */
    KvSequence sequence();

    Store store();

    /** The largest direct-I/O alignment among the devices. */
    int alignment();

    EntryChecksum entryChecksum();

    /** The layer's cluster layout (entries with per-entry checksums), or null. */
    ClusterLayout clusterLayout(int layer);

    /** The layer's medoid index, built on first use. */
    MedoidIndex medoidIndex(int layer);

    void extendClusters(int layer, ClusterLayout grown);

    void installMedoidIndex(int layer, MedoidIndex index, ClusterLayout layout);

    /** The layer's group layout, or null. */
    GroupLayout groupLayout(int layer);

    CompressedKCache compressedKeys(int layer, DType storage, int expectedTokens);

    void extendGroups(int layer, GroupLayout grown);

    /**
     * Runs {@code use} over tokens {@code [0, tokens)} of the layer as floats (keys held in memory
     * when they fit), read and checksum-verified from the SSDs; the view is closed afterwards.
     */
    <T> T withKeys(int layer, int tokens, Function<LayerKv, T> use);
}

package io.kvoffload;

import io.kvoffload.internal.decode.LayerStore;
import io.kvoffload.internal.kvswap.CompressedKCache;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.EntryChecksum;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.internal.storage.Store;
import io.kvoffload.internal.swarm.MedoidIndex;
import io.kvoffload.strategy.LayerKv;
import java.util.function.Function;

/** A {@link KvSequence} as its decoders' layer fetchers see it (its package-private layout hooks). */
final class SequenceLayers implements LayerStore {
    /** Keys up to this size are read once into memory when a strategy builds its index. */
    private static final long KEYS_IN_MEMORY = 1L << 30;

    private final KvSequence sequence;
    private final Store store;
    private final int alignment;

    SequenceLayers(KvSequence sequence, Store store, int alignment) {
        this.sequence = sequence;
        this.store = store;
        this.alignment = alignment;
    }

    @Override
    public KvSequence sequence() {
        return sequence;
    }

    @Override
    public Store store() {
        return store;
    }

    @Override
    public int alignment() {
        return alignment;
    }

    @Override
    public EntryChecksum entryChecksum() {
        return sequence.entryChecksum();
    }

    @Override
    public ClusterLayout clusterLayout(int layer) {
        return sequence.clusterLayout(layer);
    }

    @Override
    public MedoidIndex medoidIndex(int layer) {
        return sequence.medoidIndex(layer);
    }

    @Override
    public void extendClusters(int layer, ClusterLayout grown) {
        sequence.extendClusters(layer, grown);
    }

    @Override
    public void installMedoidIndex(int layer, MedoidIndex index, ClusterLayout layout) {
        sequence.installMedoidIndex(layer, index, layout);
    }

    @Override
    public GroupLayout groupLayout(int layer) {
        return sequence.groupLayout(layer);
    }

    @Override
    public CompressedKCache compressedKeys(int layer, DType storage, int expectedTokens) {
        return sequence.compressedKeys(layer, storage, expectedTokens);
    }

    @Override
    public void extendGroups(int layer, GroupLayout grown) {
        sequence.extendGroups(layer, grown);
    }

    @Override
    public <T> T withKeys(int layer, int tokens, Function<LayerKv, T> use) {
        try (SequenceLayerKv kv = new SequenceLayerKv(sequence, layer, tokens).keysInMemory(KEYS_IN_MEMORY)) {
            return use.apply(kv);
        }
    }
}

package io.kvoffload.strategy;

import io.kvoffload.KvShape;

/**
 * What a {@link SelectionStrategy} may look at when it opens a layer: the shape, the decoder's shared
 * settings and the layer's stored keys. Valid only during {@link SelectionStrategy#openLayer}.
 */
public interface LayerContext {
    /** The sequence's shape (layers, heads, head dimension, dtype). */
    KvShape shape();

    /** The layer being opened. */
    int layer();

    /** Tokens the layer holds now. */
    int tokens();

    /** Tokens {@code [0, laidOutTokens())} are in the strategy's layout (fetchable entry by entry); the rest are in the DRAM window. */
    int laidOutTokens();

    /** Sinks the pipeline always attends ({@link io.kvoffload.DecodeOptions#sinkTokens()}). */
    int sinkTokens();

    /** Newest tokens the pipeline always attends ({@link io.kvoffload.DecodeOptions#localWindow()}). */
    int localWindow();

    /**
     * The layer's K and V as floats, head by head, read from the SSDs on demand (every block
     * checksum-verified) for tokens {@code [0, tokens())}. Build the strategy's index from it; do not
     * keep it past {@link SelectionStrategy#openLayer}.
     */
    LayerKv keys();

    /** The layer's auxiliary unit layout ({@link UnitLayouts#write}), or null when it has none. */
    default StoredUnits units() {
        return null;
    }

    /**
     * How many groups of KV heads the layer's layout stores each token as: 1 when a token's entry is
     * read whole, more under {@link io.kvoffload.Placement#HEAD_SHARDED} (see
     * {@link FetchPlan#headGroups()}, which every step's plan repeats). A strategy with per-head
     * token sets can choose its index by it.
     */
    default int headGroups() {
        return 1;
    }

    /** The units of the layer's layout (pages or clusters), or null when it is not laid out. */
    default LayoutUnits layoutUnits() {
        return null;
    }

    /**
     * The query of the decoding step that opens the layer ({@code queryHeads × headDim} floats, head
     * after head: the decoder opens a layer on its first {@link io.kvoffload.KvDecoder#prefetch(int,
     * float[])}), or null when the layer opens without one (a prefetch of given positions). A strategy
     * may calibrate its index on it against the exact attention over {@link #keys()}; the step itself
     * is then served by the selector returned. A copy: valid, like the keys, only during {@link
     * SelectionStrategy#openLayer}.
     */
    default float[] openingQuery() {
        return null;
    }
}

package io.kvoffload.internal.kvswap;

import io.kvoffload.internal.util.Checks;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.LayerKv;

/**
 * What the {@link ParameterTuner} measures quality and reuse on: the keys of one representative
 * layer and a run of consecutive decoding queries against it (consecutive, because the reuse rate is
 * the overlap between adjacent steps). The adapter is fitted on {@link #adapterKeys()}, the layer
 * itself unless a separate calibration set is given (the paper fits on general text, C4, and finds
 * the adapter transfers).
 */
public final class CalibrationSet {
    private final LayerKv keys;
    private final LayerKv adapterKeys;
    private final float[][] queries;
    private final int queryHeads;

    /**
     * @param keys the layer the queries attend to (a {@link DenseLayerKv} scores fastest)
     * @param adapterKeys keys to fit the adapter on (same KV heads and head dimension), or
     *     {@code null} for {@code keys}
     * @param queries consecutive decoding queries, at least 2, each {@code queryHeads × headDim}
     *     floats; not copied
     * @param queryHeads a positive multiple of the layer's KV heads
     */
    public CalibrationSet(LayerKv keys, LayerKv adapterKeys, float[][] queries, int queryHeads) {
        this.keys = Checks.notNull("keys", keys);
        this.adapterKeys = adapterKeys == null ? keys : adapterKeys;
        if (this.adapterKeys.kvHeads() != keys.kvHeads() || this.adapterKeys.headDim() != keys.headDim()) {
            throw new IllegalArgumentException("adapterKeys has kvHeads = " + this.adapterKeys.kvHeads() + ", headDim = "
                    + this.adapterKeys.headDim() + "; keys has kvHeads = " + keys.kvHeads() + ", headDim = " + keys.headDim());
        }
        Checks.queryHeads(queryHeads, keys.kvHeads());
        Checks.notNull("queries", queries);
        Checks.inRange("queries.length", queries.length, 2, 1 << 20);
        int len = queryHeads * keys.headDim();
        Checks.rowLengths("queries", queries, len, "queryHeads × headDim");
        this.queries = queries;
        this.queryHeads = queryHeads;
    }

    /**
     * A layer's keys (materialised) with the queries of {@code queries.length} decoding steps, for
     * a tuner that has no trace: e.g. a synthetic workload's layer and its queries.
     */
    public static CalibrationSet of(LayerKv keys, float[][] queries, int queryHeads) {
        Checks.notNull("keys", keys);
        return new CalibrationSet(DenseLayerKv.materialize(keys, false), null, queries, queryHeads);
    }

    public LayerKv keys() { return keys; }
    public LayerKv adapterKeys() { return adapterKeys; }
    public int queryHeads() { return queryHeads; }
    public int steps() { return queries.length; }
    public int tokens() { return keys.tokens(); }

    /** The query of step {@code s} (not a copy). */
    public float[] query(int s) {
        Checks.index("s", s, queries.length);
        return queries[s];
    }
}

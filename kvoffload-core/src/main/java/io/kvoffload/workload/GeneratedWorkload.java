package io.kvoffload.workload;

import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;

/**
 * What the two generators share ({@link SyntheticWorkload}, {@link ModelLikeWorkload}): a shape and
 * context length fixed at construction, and decoding queries for any step up to {@link #MAX_STEP},
 * generated on demand (counter-based hashing), so a query is never stored.
 */
abstract sealed class GeneratedWorkload implements Workload permits SyntheticWorkload, ModelLikeWorkload {
    /** Steps a decoding query may be asked for; bounds the chain cache. */
    public static final int MAX_STEP = 1 << 20;

    final KvShape shape;
    final int headDim;
    private final int tokens;

    GeneratedWorkload(KvShape shape, int tokens) {
        this.shape = Checks.notNull("shape", shape);
        this.headDim = shape.headDim();
        this.tokens = tokens;
    }

    @Override public final KvShape shape() { return shape; }
    @Override public final int tokens() { return tokens; }
    /** Steps {@code 0 .. MAX_STEP}. */
    @Override public final int queryCount() { return MAX_STEP + 1; }

    /** Checks a layer and a decoding step, as every per-step accessor does. */
    final void checkStep(int layer, int step) {
        Checks.index("layer", layer, shape.layers());
        Checks.inRange("step", step, 0, MAX_STEP);
    }

    /** Checks the arguments of {@code query(layer, step, dst, offset)}: room for every query head. */
    final void checkQuery(int layer, int step, float[] dst, int offset) {
        checkStep(layer, step);
        Checks.notNull("dst", dst);
        Checks.slice("dst", offset, (long) shape.queryHeads() * headDim, dst.length);
    }
}

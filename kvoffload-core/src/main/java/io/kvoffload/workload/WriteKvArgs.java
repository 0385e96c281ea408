package io.kvoffload.workload;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;
import java.lang.foreign.MemorySegment;

/** The argument checks of {@link Workload#writeKv}: its default and {@link SyntheticWorkload}'s own share them. */
final class WriteKvArgs {
    private WriteKvArgs() {}

    /**
     * Checks {@code writeKv}'s arguments for a workload of {@code shape} and {@code tokens} tokens per
     * layer; returns the bytes of one token's keys (or values) as {@code dtype}.
     *
     * @throws IllegalArgumentException if the range or a segment's size is wrong
     */
    static long check(KvShape shape, int tokens, int layer, int fromToken, int count, DType dtype, MemorySegment keys,
            MemorySegment values) {
        Checks.index("layer", layer, shape.layers());
        Checks.notNull("dtype", dtype);
        Checks.notNull("keys", keys);
        Checks.notNull("values", values);
        if (fromToken < 0 || count < 0 || (long) fromToken + count > tokens) {
            throw new IllegalArgumentException("tokens [" + fromToken + ", " + ((long) fromToken + count)
                    + ") are out of range; allowed: within [0, " + tokens + ")");
        }
        long tokenBytes = (long) shape.kvHeads() * shape.headDim() * dtype.bytes();
        long need = tokenBytes * count;
        if (keys.byteSize() < need || values.byteSize() < need) {
            throw new IllegalArgumentException("keys.byteSize() = " + keys.byteSize() + ", values.byteSize() = "
                    + values.byteSize() + "; each must be at least count × kvHeads × headDim × dtype = " + need);
        }
        return tokenBytes;
    }
}

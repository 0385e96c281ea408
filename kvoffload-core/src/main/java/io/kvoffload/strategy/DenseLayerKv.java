package io.kvoffload.strategy;

import io.kvoffload.internal.util.Checks;

/**
 * A layer's keys and values held in one {@code float[]} per KV head ({@code tokens × headDim},
 * token-major). One head of a million tokens at head dimension 128 is 512 MiB, so materialise only
 * the heads a computation needs; {@link #materialize(LayerKv, boolean)} copies from any source.
 */
public final class DenseLayerKv implements LayerKv {
    private final int tokens;
    private final int headDim;
    private final float[][] keys;
    private final float[][] values;

    /**
     * Wraps arrays without copying.
     *
     * @param tokens tokens per head, at least 1
     * @param headDim elements per token and head, at least 1
     * @param keys one array of {@code tokens × headDim} per KV head
     * @param values one array per KV head like {@code keys}, or {@code null} for keys only
     */
    public DenseLayerKv(int tokens, int headDim, float[][] keys, float[][] values) {
        Checks.positive("tokens", tokens);
        Checks.positive("headDim", headDim);
        Checks.notNull("keys", keys);
        Checks.inRange("keys.length", keys.length, 1, 1024);
        long expected = (long) tokens * headDim;
        Checks.rowLengths("keys", keys, expected, "tokens × headDim");
        if (values != null) {
            if (values.length != keys.length) {
                throw new IllegalArgumentException("values.length = " + values.length + " must equal keys.length = " + keys.length);
            }
            Checks.rowLengths("values", values, expected, "tokens × headDim");
        }
        this.tokens = tokens;
        this.headDim = headDim;
        this.keys = keys;
        this.values = values;
    }

    /**
     * Copies every head of {@code source} into arrays.
     *
     * @param withValues also copy the values (doubles the memory)
     * @throws IllegalArgumentException if one head does not fit in a Java array
     */
    public static DenseLayerKv materialize(LayerKv source, boolean withValues) {
        long perHead = (long) source.tokens() * source.headDim();
        if (perHead > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("tokens × headDim = " + perHead + " does not fit one array; allowed: up to "
                    + (Integer.MAX_VALUE - 8) + " (stream through LayerKv in chunks instead)");
        }
        float[][] k = new float[source.kvHeads()][];
        float[][] v = withValues ? new float[source.kvHeads()][] : null;
        for (int h = 0; h < source.kvHeads(); h++) {
            k[h] = new float[(int) perHead];
            copy(source, h, k[h], false);
            if (v != null) {
                v[h] = new float[(int) perHead];
                copy(source, h, v[h], true);
            }
        }
        return new DenseLayerKv(source.tokens(), source.headDim(), k, v);
    }

    private static void copy(LayerKv source, int head, float[] dst, boolean values) {
        int chunk = Math.max(1, (1 << 20) / source.headDim());
        for (int t = 0; t < source.tokens(); t += chunk) {
            int n = Math.min(chunk, source.tokens() - t);
            if (values) {
                source.values(head, t, n, dst, t * source.headDim());
            } else {
                source.keys(head, t, n, dst, t * source.headDim());
            }
        }
    }

    @Override public int tokens() { return tokens; }
    @Override public int kvHeads() { return keys.length; }
    @Override public int headDim() { return headDim; }
    @Override public boolean hasValues() { return values != null; }

    /** The array behind one head's keys (not a copy): fast paths read it directly. */
    public float[] keyArray(int kvHead) {
        Checks.index("kvHead", kvHead, keys.length);
        return keys[kvHead];
    }

    /** The array behind one head's values (not a copy). */
    public float[] valueArray(int kvHead) {
        Checks.index("kvHead", kvHead, keys.length);
        if (values == null) {
            throw new IllegalStateException("this layer holds keys only");
        }
        return values[kvHead];
    }

    @Override
    public void keys(int kvHead, int fromToken, int count, float[] dst, int dstOffset) {
        LayerKv.checkRange(this, kvHead, fromToken, count, dst, dstOffset);
        System.arraycopy(keys[kvHead], fromToken * headDim, dst, dstOffset, count * headDim);
    }

    @Override
    public void values(int kvHead, int fromToken, int count, float[] dst, int dstOffset) {
        LayerKv.checkRange(this, kvHead, fromToken, count, dst, dstOffset);
        if (values == null) {
            throw new IllegalStateException("this layer holds keys only");
        }
        System.arraycopy(values[kvHead], fromToken * headDim, dst, dstOffset, count * headDim);
    }
}

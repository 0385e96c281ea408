package io.kvoffload.strategy;

import io.kvoffload.internal.util.Checks;

/**
 * The keys and values of one layer, read head by head. Implementations may hold them in arrays
 * ({@link DenseLayerKv}), generate them on demand ({@code SyntheticWorkload.layer(int)}) or read
 * them from a mapped trace file ({@code TraceReader.layer(int)}), so code that scores a million
 * tokens streams through them in chunks instead of asking for one huge array.
 *
 * <p>Copies are token-major within one KV head: token {@code t}'s {@code headDim} elements land at
 * {@code dst[dstOffset + (t − fromToken) × headDim ...]}.
 */
public interface LayerKv {
    /** Tokens in the layer. */
    int tokens();

    /** KV heads. */
    int kvHeads();

    /** Elements per head. */
    int headDim();

    /** Whether {@link #values} is available (a trace may hold keys only). */
    default boolean hasValues() {
        return true;
    }

    /**
     * Copies the keys of {@code count} tokens starting at {@code fromToken} for one KV head.
     *
     * @throws IllegalArgumentException if the head, the token range or the destination is out of range
     */
    void keys(int kvHead, int fromToken, int count, float[] dst, int dstOffset);

    /**
     * Copies the values of {@code count} tokens starting at {@code fromToken} for one KV head.
     *
     * @throws IllegalArgumentException if the head, the token range or the destination is out of range
     * @throws IllegalStateException if this layer has no values
     */
    void values(int kvHead, int fromToken, int count, float[] dst, int dstOffset);

    /** Checks the arguments of {@link #keys} and {@link #values}; implementations call it first. */
    static void checkRange(LayerKv kv, int kvHead, int fromToken, int count, float[] dst, int dstOffset) {
        if (kvHead < 0 || kvHead >= kv.kvHeads()) {
            throw new IllegalArgumentException("kvHead = " + kvHead + " is out of range; allowed: 0.." + (kv.kvHeads() - 1));
        }
        if (fromToken < 0 || count < 0 || (long) fromToken + count > kv.tokens()) {
            throw new IllegalArgumentException("tokens [" + fromToken + ", " + ((long) fromToken + count)
                    + ") are out of range; allowed: within [0, " + kv.tokens() + ")");
        }
        Checks.notNull("dst", dst);
        Checks.slice("dst", dstOffset, (long) count * kv.headDim(), dst.length);
    }
}

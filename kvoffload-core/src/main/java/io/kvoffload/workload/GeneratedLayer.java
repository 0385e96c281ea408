package io.kvoffload.workload;

import io.kvoffload.strategy.LayerKv;

/**
 * A layer whose every key and value row is a pure function of (KV head, token): the generators
 * write rows one at a time, so a layer of any length is read lazily, in any order, from any thread.
 */
abstract class GeneratedLayer implements LayerKv {
    private final String name;
    private final int tokens;
    private final int kvHeads;
    private final int headDim;

    GeneratedLayer(String name, int tokens, int kvHeads, int headDim) {
        this.name = name;
        this.tokens = tokens;
        this.kvHeads = kvHeads;
        this.headDim = headDim;
    }

    /** Writes the key of {@code token} in {@code kvHead} to {@code dst[off .. off + headDim)}. */
    abstract void key(int kvHead, int token, float[] dst, int off);

    /** Writes the value of {@code token} in {@code kvHead} to {@code dst[off .. off + headDim)}. */
    abstract void value(int kvHead, int token, float[] dst, int off);

    @Override public int tokens() { return tokens; }
    @Override public int kvHeads() { return kvHeads; }
    @Override public int headDim() { return headDim; }

    @Override
    public void keys(int kvHead, int fromToken, int count, float[] dst, int dstOffset) {
        LayerKv.checkRange(this, kvHead, fromToken, count, dst, dstOffset);
        for (int i = 0; i < count; i++) {
            key(kvHead, fromToken + i, dst, dstOffset + i * headDim);
        }
    }

    @Override
    public void values(int kvHead, int fromToken, int count, float[] dst, int dstOffset) {
        LayerKv.checkRange(this, kvHead, fromToken, count, dst, dstOffset);
        for (int i = 0; i < count; i++) {
            value(kvHead, fromToken + i, dst, dstOffset + i * headDim);
        }
    }

    @Override
    public String toString() {
        return name;
    }
}

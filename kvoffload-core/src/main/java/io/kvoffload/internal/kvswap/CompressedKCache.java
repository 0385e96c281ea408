package io.kvoffload.internal.kvswap;

import io.kvoffload.DType;
import io.kvoffload.internal.util.Checks;
import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.strategy.LayerKv;
import java.util.Arrays;

/**
 * KVSwap's in-memory compressed K cache of one layer (§3.2, Fig. 7a): every offloaded token's key
 * projected through the {@link LowRankAdapter}, {@code r} elements per token instead of
 * {@code kvHeads × headDim}. It is what the {@link GroupPredictor} scores; the full K and V live on
 * the SSDs.
 *
 * <h2>Layout and why</h2>
 * Tokens are kept in chunks of {@link #CHUNK_TOKENS}, so appending never copies what is there
 * (tokens arrive one group at a time while decoding). Inside a chunk the elements are
 * dimension-major (element {@code j} of all the chunk's tokens is contiguous): scoring a query is
 * then {@code r} passes of {@code scores[i] += q_j · column_j[i]}, a loop the JIT vectorises, where a
 * token-major dot product would be a scalar reduction.
 *
 * <h2>Element type</h2>
 * The cache is only used to rank tokens, never for attention, so 16-bit elements cost no
 * measurable quality:
 * <ul>
 * <li>{@link DType#F16}: half the DRAM and the fastest to score (the JIT vectorises the
 *     conversion, and half the bytes stream from memory); values beyond ±65504 are clamped;</li>
 * <li>{@link DType#F32}: exact projections, twice the bytes;</li>
 * <li>{@link DType#BF16}: F32's range in 16 bits, but scored by a scalar loop (the JIT does not
 *     vectorise the bit-shift conversion), several times slower than F16.</li>
 * </ul>
 * 16-bit elements are rounded to nearest even.
 *
 * <p>Single writer, single reader: the engine appends and scores a layer from one thread at a time.
 */
public final class CompressedKCache {
    /** Tokens per chunk. */
    public static final int CHUNK_TOKENS = 4096;
    /** Largest finite F16 value. */
    private static final float F16_MAX = 65504f;

    private final LowRankAdapter adapter;
    private final DType storage;
    private final int rank;
    private float[][][] f32 = new float[0][][]; // [chunk][element j][token i]
    private short[][] f16 = new short[0][];
    private int chunks;
    private int tokens;
    private final float[] scratchKey;
    private final float[] scratchLowRank;

    /**
     * An empty cache.
     *
     * @param storage F32, F16 or BF16
     * @param expectedTokens tokens to reserve chunks for now, 0..2^30 (more are added on demand)
     */
    public CompressedKCache(LowRankAdapter adapter, DType storage, int expectedTokens) {
        this.adapter = Checks.notNull("adapter", adapter);
        this.storage = Checks.notNull("storage", storage);
        Checks.inRange("expectedTokens", expectedTokens, 0, 1 << 30);
        this.rank = adapter.rank();
        this.scratchKey = new float[adapter.inputDim()];
        this.scratchLowRank = new float[rank];
        ensureChunks((expectedTokens + CHUNK_TOKENS - 1) / CHUNK_TOKENS);
    }

    /** An F32 cache with no reservation. */
    public CompressedKCache(LowRankAdapter adapter) {
        this(adapter, DType.F32, 0);
    }

    public LowRankAdapter adapter() { return adapter; }
    public DType storage() { return storage; }
    /** Elements per token (the adapter's r). */
    public int rank() { return rank; }
    /** Tokens held: positions {@code 0 .. tokens() − 1}. */
    public int tokens() { return tokens; }

    // ---------------------------------------------------------------- appending

    /**
     * Projects and appends {@code count} keys, each {@code kvHeads × headDim} floats (token-major,
     * head after head: the engine's K layout), taken from {@code keys[offset ..]}.
     */
    public void append(float[] keys, int offset, int count) {
        Checks.notNull("keys", keys);
        Checks.inRange("count", count, 0, (1 << 30) - tokens);
        int in = adapter.inputDim();
        Checks.slice("keys", offset, (long) count * in, keys.length);
        for (int t = 0; t < count; t++) {
            adapter.project(keys, offset + t * in, scratchLowRank, 0);
            put(scratchLowRank, 0);
        }
    }

    /**
     * Projects and appends tokens {@code [fromToken, fromToken + count)} of a layer (prefill, or
     * tokens the rolling buffer hands over), read head by head.
     */
    public void appendFrom(LayerKv layer, int fromToken, int count) {
        Checks.notNull("layer", layer);
        if (layer.kvHeads() != adapter.kvHeads() || layer.headDim() != adapter.headDim()) {
            throw new IllegalArgumentException("layer has kvHeads = " + layer.kvHeads() + ", headDim = "
                    + layer.headDim() + "; the adapter expects kvHeads = " + adapter.kvHeads() + ", headDim = "
                    + adapter.headDim());
        }
        Checks.inRange("count", count, 0, (1 << 30) - tokens);
        int d = adapter.headDim();
        int h = adapter.kvHeads();
        int step = 256;
        float[][] perHead = new float[h][step * d]; // LayerKv reads head by head; regroup per token
        for (int from = fromToken; from < fromToken + count; from += step) {
            int n = Math.min(step, fromToken + count - from);
            for (int head = 0; head < h; head++) {
                layer.keys(head, from, n, perHead[head], 0);
            }
            for (int t = 0; t < n; t++) {
                for (int head = 0; head < h; head++) {
                    System.arraycopy(perHead[head], t * d, scratchKey, head * d, d);
                }
                adapter.project(scratchKey, 0, scratchLowRank, 0);
                put(scratchLowRank, 0);
            }
        }
    }

    /**
     * Appends already-compressed keys ({@code r} floats per token, e.g. restored from a snapshot),
     * from {@code lowRank[offset ..]}.
     */
    public void appendProjected(float[] lowRank, int offset, int count) {
        Checks.notNull("lowRank", lowRank);
        Checks.inRange("count", count, 0, (1 << 30) - tokens);
        Checks.slice("lowRank", offset, (long) count * rank, lowRank.length);
        for (int t = 0; t < count; t++) {
            put(lowRank, offset + t * rank);
        }
    }

    private void put(float[] v, int offset) {
        int chunk = tokens / CHUNK_TOKENS;
        int i = tokens % CHUNK_TOKENS;
        if (chunk == chunks) {
            ensureChunks(chunks + 1);
        }
        if (storage == DType.F32) {
            float[][] c = f32[chunk];
            for (int j = 0; j < rank; j++) {
                c[j][i] = v[offset + j];
            }
        } else {
            short[] c = f16[chunk];
            boolean bf = storage == DType.BF16;
            for (int j = 0; j < rank; j++) {
                // F16 tops out at 65504: clamp so an outlier key stays the largest, not infinite.
                float x = bf ? v[offset + j] : Math.max(-F16_MAX, Math.min(F16_MAX, v[offset + j]));
                c[j * CHUNK_TOKENS + i] = bf ? ElementCodec.toBf16(x) : Float.floatToFloat16(x);
            }
        }
        tokens++;
    }

    private void ensureChunks(int want) {
        if (want <= chunks) {
            return;
        }
        int cap = storage == DType.F32 ? f32.length : f16.length;
        if (want > cap) {
            int newCap = Math.max(want, Math.max(4, cap * 2));
            if (storage == DType.F32) {
                f32 = Arrays.copyOf(f32, newCap);
            } else {
                f16 = Arrays.copyOf(f16, newCap);
            }
        }
        for (int c = chunks; c < want; c++) {
            if (storage == DType.F32) {
                f32[c] = new float[rank][CHUNK_TOKENS];
            } else {
                f16[c] = new short[rank * CHUNK_TOKENS];
            }
        }
        chunks = want;
    }

    /** Forgets every token; the chunks stay allocated for reuse. */
    public void clear() {
        tokens = 0;
    }

    // ---------------------------------------------------------------- reading

    /** The compressed key of {@code token}, decoded to floats, into {@code dst[dstOffset .. + r)}. */
    public void get(int token, float[] dst, int dstOffset) {
        Checks.index("token", token, tokens);
        Checks.notNull("dst", dst);
        Checks.slice("dst", dstOffset, rank, dst.length);
        int chunk = token / CHUNK_TOKENS;
        int i = token % CHUNK_TOKENS;
        for (int j = 0; j < rank; j++) {
            dst[dstOffset + j] = element(chunk, j * CHUNK_TOKENS + i);
        }
    }

    private float element(int chunk, int at) {
        return switch (storage) {
            case F32 -> f32[chunk][at / CHUNK_TOKENS][at % CHUNK_TOKENS];
            case BF16 -> ElementCodec.fromBf16(f16[chunk][at]);
            case F16 -> Float.float16ToFloat(f16[chunk][at]);
        };
    }

    /**
     * Approximate logits of tokens {@code [fromToken, fromToken + count)} against a low-rank query:
     * {@code out[outOffset + t − fromToken] = lowRankQuery · k_lr[t]}. Allocation-free.
     *
     * @param lowRankQuery at least {@code r} floats
     */
    public void scores(float[] lowRankQuery, int fromToken, int count, float[] out, int outOffset) {
        if (lowRankQuery.length < rank) {
            throw new IllegalArgumentException("lowRankQuery.length = " + lowRankQuery.length
                    + " is out of range; allowed: at least rank = " + rank);
        }
        if (fromToken < 0 || count < 0 || (long) fromToken + count > tokens) {
            throw new IllegalArgumentException("tokens [" + fromToken + ", " + ((long) fromToken + count)
                    + ") are out of range; allowed: within [0, " + tokens + ")");
        }
        Checks.slice("out", outOffset, count, out.length);
        int t = fromToken;
        int o = outOffset;
        int end = fromToken + count;
        while (t < end) {
            int chunk = t / CHUNK_TOKENS;
            int i0 = t % CHUNK_TOKENS;
            int n = Math.min(CHUNK_TOKENS - i0, end - t);
            Arrays.fill(out, o, o + n, 0f);
            switch (storage) {
                case F32 -> scoreF32(f32[chunk], lowRankQuery, i0, n, out, o);
                case BF16 -> scoreBf16(f16[chunk], lowRankQuery, i0, n, out, o);
                case F16 -> scoreF16(f16[chunk], lowRankQuery, i0, n, out, o);
            }
            t += n;
            o += n;
        }
    }

    private void scoreF32(float[][] c, float[] q, int i0, int n, float[] out, int o) {
        if (i0 == 0 && o == 0) {
            // The predictor's case (whole chunks into the start of its buffer). Two float arrays
            // indexed with different offsets keep C2 from vectorising (it cannot rule out overlap);
            // with both at 0 it does, about 3× faster.
            for (int j = 0; j < rank; j++) {
                float qj = q[j];
                float[] col = c[j];
                for (int i = 0; i < n; i++) {
                    out[i] += qj * col[i];
                }
            }
            return;
        }
        for (int j = 0; j < rank; j++) {
            float qj = q[j];
            float[] col = c[j];
            for (int i = 0; i < n; i++) {
                out[o + i] += qj * col[i0 + i];
            }
        }
    }

    private void scoreBf16(short[] c, float[] q, int i0, int n, float[] out, int o) {
        for (int j = 0; j < rank; j++) {
            float qj = q[j];
            int base = j * CHUNK_TOKENS + i0;
            for (int i = 0; i < n; i++) {
                out[o + i] += qj * Float.intBitsToFloat(c[base + i] << 16); // BF16 is the upper half of an F32
            }
        }
    }

    private void scoreF16(short[] c, float[] q, int i0, int n, float[] out, int o) {
        for (int j = 0; j < rank; j++) {
            float qj = q[j];
            int base = j * CHUNK_TOKENS + i0;
            for (int i = 0; i < n; i++) {
                out[o + i] += qj * Float.float16ToFloat(c[base + i]);
            }
        }
    }

    // ---------------------------------------------------------------- memory

    /** Bytes of the held tokens: {@code tokens × r × storage bytes}. */
    public long bytes() {
        return bytesFor(tokens, rank, storage);
    }

    /** Bytes of the allocated chunks (at least {@link #bytes()}). */
    public long reservedBytes() {
        return (long) chunks * CHUNK_TOKENS * rank * storage.bytes();
    }

    /** What a compressed K cache of {@code tokens} takes: {@code tokens × rank × storage bytes}. */
    public static long bytesFor(long tokens, int rank, DType storage) {
        Checks.inRange("tokens", tokens, 0, Long.MAX_VALUE / 65536);
        Checks.inRange("rank", rank, 1, 16384);
        Checks.notNull("storage", storage);
        return tokens * rank * storage.bytes();
    }

    /** What the full K cache of the held tokens takes in {@code dtype}: {@code tokens × kvHeads × headDim × dtype}. */
    public long fullKBytes(DType dtype) {
        Checks.notNull("dtype", dtype);
        return (long) tokens * adapter.inputDim() * dtype.bytes();
    }

    /**
     * Full K bytes in {@code dtype} over this cache's bytes: {@code σ × dtype / storage}, e.g. 8 for
     * Llama-3-8B at r = 128 with BF16 on both sides. NaN while empty.
     */
    public double compressionRatio(DType dtype) {
        Checks.notNull("dtype", dtype);
        if (tokens == 0) {
            return Double.NaN;
        }
        return fullKBytes(dtype) / (double) bytes();
    }

    @Override
    public String toString() {
        return "CompressedKCache{tokens=" + tokens + ", rank=" + rank + ", storage=" + storage + ", bytes=" + bytes() + "}";
    }
}

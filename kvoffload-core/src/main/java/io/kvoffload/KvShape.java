package io.kvoffload;

import io.kvoffload.internal.util.Checks;

/**
 * The shape of a model's KV cache.
 *
 * <p>An <em>entry</em> is one token's K and V for one layer, all KV heads: {@code 2 × kvHeads ×
 * headDim × dtype.bytes()} bytes (4 KiB for a Llama-3-8B layer in BF16). Query heads may be a
 * multiple of KV heads (grouped-query attention); selection aggregates the query heads that share
 * a KV head.
 *
 * <p>The K and V tensors the engine passes in and receives back are token-major: for each token,
 * {@code kvHeads × headDim} elements, head after head.
 *
 * @param layers number of transformer layers, 1..4096
 * @param queryHeads number of query heads, a positive multiple of {@code kvHeads}
 * @param kvHeads number of KV heads, 1..1024
 * @param headDim dimension of one head, 1..16384
 * @param dtype element type
 */
public record KvShape(int layers, int queryHeads, int kvHeads, int headDim, DType dtype) {

    /** Largest entry the library accepts (64 MiB), so block arithmetic never overflows. */
    public static final long MAX_ENTRY_BYTES = 64L << 20;

    public KvShape {
        Checks.inRange("layers", layers, 1, 4096);
        Checks.inRange("kvHeads", kvHeads, 1, 1024);
        Checks.inRange("headDim", headDim, 1, 16384);
        Checks.notNull("dtype", dtype);
        Checks.queryHeads(queryHeads, kvHeads);
        if (2L * kvHeads * headDim * dtype.bytes() > MAX_ENTRY_BYTES) {
            throw new IllegalArgumentException("entry size 2 × kvHeads × headDim × dtype = "
                    + 2L * kvHeads * headDim * dtype.bytes() + " bytes exceeds the maximum " + MAX_ENTRY_BYTES);
        }
    }

    /** Llama-3-8B: 32 layers, 32 query heads, 8 KV heads, head dim 128, BF16 (4 KiB entries). */
    public static KvShape llama3_8b() {
        return new KvShape(32, 32, 8, 128, DType.BF16);
    }

    /** Query heads per KV head (the GQA group size). */
    public int groupSize() {
        return queryHeads / kvHeads;
    }

    /** Bytes of K (or of V) for one token of one layer: {@code kvHeads × headDim × dtype}. */
    public int halfEntryBytes() {
        return kvHeads * headDim * dtype.bytes();
    }

    /** Bytes of one entry: one token's K and V for one layer. */
    public int entryBytes() {
        return 2 * halfEntryBytes();
    }

    /** Elements of K (or of V) for one token of one layer. */
    public int elementsPerToken() {
        return kvHeads * headDim;
    }

    /**
     * A fingerprint of everything that decides the bytes on disk: shape, dtype and the on-disk
     * layout version. Prefix reuse only matches sequences with the same fingerprint.
     */
    public String fingerprint() {
        return "v" + LAYOUT_VERSION + ":L" + layers + ":Q" + queryHeads + ":H" + kvHeads + ":D" + headDim + ":" + dtype;
    }

    /** Version of the entry layout on disk; part of every fingerprint. */
    public static final int LAYOUT_VERSION = 1;
}

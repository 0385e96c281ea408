package io.kvoffload.cuda;

/**
 * Byte layout of a gathered layer view in a {@link LayerStreamBuffer} slot on the device, for a
 * view of {@code tokens} tokens:
 *
 * <pre>
 * [K head 0: tokens × headDim] … [K head H-1] [V head 0] … [V head H-1]   (dtype elements)
 * [positions: tokens × int32]                                          (16-byte aligned)
 * [block table: ceil(tokens / blockTokens) × int32]                    (16-byte aligned)
 * [head masks: tokens × int64]                                         (16-byte aligned)
 * </pre>
 *
 * Each KV head's keys (and values) are contiguous and the heads follow one another without gaps
 * ({@link #headStride()} apart), so K and V together are one dense {@code [2][kvHeads][tokens][headDim]}
 * tensor for attention kernels. Positions and the block table are the {@link io.kvoffload.KvView}'s:
 * entry {@code b} of the table is the physical block, in every head's keys and values, of logical
 * block {@code b} ({@code blockTokens} rows). The head masks are the view's
 * {@link io.kvoffload.KvView#headMask(int)}: bit {@code h} of row {@code r}'s int64 (little-endian)
 * is set when the row holds KV head {@code h}; the region is always reserved but filled only for a
 * view with {@link io.kvoffload.KvView#partialRows() partial rows}. {@link ViewUpload} plans the
 * copies that fill it.
 *
 * @param tokens tokens in the view
 */
public record ViewLayout(int kvHeads, int headDim, int dtypeBytes, int blockTokens, int tokens) {
    static final int ALIGN = 16;

    public ViewLayout {
        check("kvHeads", kvHeads, 1, 1 << 16);
        check("headDim", headDim, 1, 1 << 16);
        check("dtypeBytes", dtypeBytes, 1, 8);
        check("blockTokens", blockTokens, 1, 65536);
        check("tokens", tokens, 0, Integer.MAX_VALUE - 1);
    }

    private static void check(String name, int v, int min, int max) {
        if (v < min || v > max) {
            throw new IllegalArgumentException(name + " = " + v + " is out of range; allowed: " + min + ".." + max);
        }
    }

    /** Bytes of one token's row for one head. */
    public long rowBytes() {
        return (long) headDim * dtypeBytes;
    }

    /** Bytes from one head's keys (or values) to the next head's: {@code tokens × rowBytes}, no padding. */
    public long headStride() {
        return tokens * rowBytes();
    }

    /** Offset of head {@code h}'s keys. */
    public long keysOffset(int h) {
        checkHead(h);
        return h * headStride();
    }

    /** Offset of head {@code h}'s values. */
    public long valuesOffset(int h) {
        checkHead(h);
        return (kvHeads + h) * headStride();
    }

    private void checkHead(int h) {
        if (h < 0 || h >= kvHeads) {
            throw new IllegalArgumentException("head = " + h + " is out of range; allowed: 0.." + (kvHeads - 1));
        }
    }

    /** Bytes of K and V together. */
    public long kvBytes() {
        return 2L * kvHeads * tokens * rowBytes();
    }

    public long positionsOffset() {
        return align(kvBytes());
    }

    public int blockCount() {
        return (int) ((tokens + (long) blockTokens - 1) / blockTokens);
    }

    public long blockTableOffset() {
        return align(positionsOffset() + 4L * tokens);
    }

    /** Offset of the int64 head masks, one per row (filled only for a view with partial rows). */
    public long headMasksOffset() {
        return align(blockTableOffset() + 4L * blockCount());
    }

    /** Bytes of the head masks: {@code 8 × tokens}. */
    public long headMasksBytes() {
        return 8L * tokens;
    }

    /** Bytes the view occupies, padding included (the copies move {@link ViewUpload#bytes()} of them). */
    public long totalBytes() {
        return align(headMasksOffset() + headMasksBytes());
    }

    /** Bytes a buffer needs to hold a view of up to {@code maxTokens} tokens. */
    public static long capacityBytes(int kvHeads, int headDim, int dtypeBytes, int blockTokens, int maxTokens) {
        return new ViewLayout(kvHeads, headDim, dtypeBytes, blockTokens, maxTokens).totalBytes();
    }

    private static long align(long v) {
        return (v + ALIGN - 1) & -ALIGN;
    }
}

package io.kvoffload.cuda;

/**
 * Byte layout of a gathered layer view, the same on the host (a DRAM slot) and on the device (a
 * layer stream buffer slot), so one copy moves all of it:
 *
 * <pre>
 * [K head 0: tokens × headDim] … [K head H-1] [V head 0] … [V head H-1]   (dtype elements)
 * [positions: tokens × int32]                                          (16-byte aligned)
 * [block table: ceil(tokens / blockTokens) × int32]                    (16-byte aligned)
 * </pre>
 *
 * Each KV head's keys (and values) are contiguous, as attention kernels read them per head. Entry
 * {@code b} of the block table is the sequence block ({@code position / blockTokens}) of the view's
 * {@code b}-th run of {@code blockTokens} tokens, for paged-attention kernels that map view blocks
 * to sequence blocks.
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

    /** Offset of head {@code h}'s keys. */
    public long keysOffset(int h) {
        checkHead(h);
        return h * (long) tokens * rowBytes();
    }

    /** Offset of head {@code h}'s values. */
    public long valuesOffset(int h) {
        checkHead(h);
        return (kvHeads + h) * (long) tokens * rowBytes();
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

    /** Bytes the view occupies (what one copy moves). */
    public long totalBytes() {
        return align(blockTableOffset() + 4L * blockCount());
    }

    /** Bytes a buffer needs to hold a view of up to {@code maxTokens} tokens. */
    public static long capacityBytes(int kvHeads, int headDim, int dtypeBytes, int blockTokens, int maxTokens) {
        return new ViewLayout(kvHeads, headDim, dtypeBytes, blockTokens, maxTokens).totalBytes();
    }

    private static long align(long v) {
        return (v + ALIGN - 1) & -ALIGN;
    }
}

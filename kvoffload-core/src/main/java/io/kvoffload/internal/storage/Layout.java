package io.kvoffload.internal.storage;

import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;

/**
 * The on-disk layout of a block: {@code blockTokens} entries back to back, each entry the token's
 * K (all KV heads) followed by its V, padded with zeros to the direct-I/O alignment. A block is
 * one extent: the unit of placement, of I/O and of checksumming.
 */
public final class Layout {
    private Layout() {}

    public static long extentBytes(KvShape shape, int blockTokens, int alignment) {
        return Checks.alignUp((long) blockTokens * shape.entryBytes(), alignment);
    }

    /** Device of block {@code block} of layer {@code layer}: round-robin, each layer starting one further. */
    public static int stripeDevice(int layer, int block, int devices) {
        return (int) (((long) layer + block) % devices);
    }
}

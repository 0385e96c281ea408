package io.kvoffload.internal.storage;

import java.lang.foreign.MemorySegment;

/**
 * A copy of committed blocks outside this store (the shared remote tier): the last resort of a read
 * whose every local copy failed verification. What it hands back was verified against the remote
 * checksum; the reader verifies it once more against the local one before using it, so a wrong
 * remote copy is never served.
 */
@FunctionalInterface
public interface RemoteCopy {
    /**
     * Block {@code block} of {@code layer} of the committed sequence {@code m}: the K entries of its
     * {@code blockTokens} tokens, then their V entries; null when the tier has no good copy.
     */
    MemorySegment block(Manifest m, int layer, int block);

    /**
     * Fills {@code dst} with token {@code i} of a block as {@link #block} returns it: its K entry
     * then its V entry ({@code half} bytes each), the store's layout of an entry.
     */
    static void entry(MemorySegment remoteBlock, int blockTokens, int half, int i, MemorySegment dst, long dstAt) {
        MemorySegment.copy(remoteBlock, (long) i * half, dst, dstAt, half);
        MemorySegment.copy(remoteBlock, (long) (blockTokens + i) * half, dst, dstAt + half, half);
    }
}

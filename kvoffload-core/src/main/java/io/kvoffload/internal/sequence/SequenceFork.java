package io.kvoffload.internal.sequence;

import io.kvoffload.internal.dram.DramSlot;
import io.kvoffload.internal.storage.BlockTable;
import io.kvoffload.internal.storage.EntryChecksum;
import io.kvoffload.internal.storage.Layout;
import io.kvoffload.internal.storage.Manifest;
import io.kvoffload.internal.storage.Store;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A fork: a new sequence that starts as the first {@code prefix} tokens of a committed one (how
 * vLLM and SGLang share a prompt prefix between requests). Every block of the prefix that the
 * source holds as an extent is <em>shared</em>: the fork's block table names the same extent
 * (marked shared, with its writer's checksum identity) and the store counts one more holder
 * ({@link Store#share}), so no byte is read or written. A partial last block is shared too until
 * the fork appends to it: the append brings it into the fork's DRAM tail and the next seal gives it
 * a fresh extent of the fork's own (copy-on-write, {@link BlockWriter}); the shared extent is then
 * let go like any superseded one. Tokens the source keeps only in a strategy layout (a Swarm
 * cluster or KVSwap group layout, which covers the source's whole laid-out range and cannot be cut
 * at the prefix) have no block to share: they are read back through the source's layout, verified,
 * and written as the fork's own blocks ({@link #copyLaidOut}). The fork has no layout; one is laid
 * out over it as over any sequence of those tokens.
 */
public final class SequenceFork {
    private SequenceFork() {}

    /**
     * The ledger of a fork of {@code source} at {@code prefix} tokens: the prefix's block extents
     * shared (one more holder each, uncommitted in the fork, so a close without commit lets them
     * go), the blocks the source keeps in a layout left without extent for {@link #copyLaidOut}.
     * Called under the store's lock, with {@code source} its committed manifest.
     */
    public static ExtentLedger ledger(Store store, Manifest source, int prefix) {
        int blockTokens = source.blockTokens();
        int blocks = (prefix + blockTokens - 1) / blockTokens;
        ExtentLedger ledger = new ExtentLedger(store, source.shape().layers(), blockTokens);
        EntryChecksum writer = source.entryChecksum();
        for (int l = 0; l < ledger.layerCount(); l++) {
            LayerState s = ledger.layer(l);
            BlockTable from = source.layers()[l];
            s.blocks.ensureBlocks(blocks);
            for (int b = 0; b < blocks; b++) {
                if (from.hasExtent(b)) {
                    s.blocks.setShared(b, from.device(b), from.offset(b), from.length(b), from.crc(b), false,
                            from.checksum(b, writer));
                    store.share(from.device(b), from.offset(b));
                }
            }
            s.tokens = prefix;
        }
        return ledger;
    }

    /** Whether some block of the fork's prefix must be copied (the source keeps its tokens only in a layout). */
    public static boolean needsCopy(ExtentLedger fork) {
        for (int l = 0; l < fork.layerCount(); l++) {
            LayerState s = fork.layer(l);
            for (int b = 0; b < s.blocks.size(); b++) {
                if (!s.blocks.hasExtent(b)) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * Copies into the fork's own blocks the prefix tokens the source keeps only in a layout: read
     * through {@code source}'s read path (layouts included, every record verified) and written by
     * the fork's {@code writer}. The caller keeps the source's extents from being freed meanwhile.
     *
     * @return the bytes of KV copied
     */
    public static long copyLaidOut(Store store, Manifest source, ExtentLedger fork, BlockWriter writer, int alignment) {
        int blockTokens = source.blockTokens();
        int half = source.shape().halfEntryBytes();
        int entry = source.shape().entryBytes();
        long extentBytes = Layout.extentBytes(source.shape(), blockTokens, alignment);
        SequenceReader reader = new SequenceReader(store, new ExtentLedger(store, source, false), source.id(),
                source.shape(), source.entryChecksum(), blockTokens, extentBytes, alignment);
        long copied = 0;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment keys = arena.allocate((long) blockTokens * half, 64);
            MemorySegment values = arena.allocate((long) blockTokens * half, 64);
            for (int l = 0; l < fork.layerCount(); l++) {
                LayerState s = fork.layer(l);
                for (int b = 0; b < s.blocks.size(); b++) {
                    if (s.blocks.hasExtent(b)) {
                        continue;
                    }
                    int from = b * blockTokens;
                    int n = Math.min(blockTokens, s.tokens - from);
                    reader.read(l, reader.range(l, from, n), keys, values, null);
                    DramSlot slot = store.dram().acquire(extentBytes);
                    try {
                        MemorySegment dst = slot.segment();
                        for (int i = 0; i < n; i++) {
                            MemorySegment.copy(keys, (long) i * half, dst, (long) i * entry, half);
                            MemorySegment.copy(values, (long) i * half, dst, (long) i * entry + half, half);
                        }
                    } catch (RuntimeException e) {
                        store.dram().release(slot);
                        throw e;
                    }
                    writer.adoptBlock(l, b, slot, n);
                    copied += 2L * n * half;
                }
            }
        }
        return copied;
    }
}

package io.kvoffload.internal.storage;

import java.util.Arrays;

/**
 * Where each block of one layer lives: device, offset, extent length and CRC32C, in growable
 * parallel arrays. Block {@code b} holds tokens {@code [b·B, (b+1)·B)}. A block whose device is -1
 * has no extent yet (its tokens are still only in DRAM).
 *
 * <p>A block may be <em>shared</em>: its extent was written by another sequence and this one
 * {@linkplain io.kvoffload.KvEngine#fork forked} from it, so its checksum is seeded with that
 * sequence's identity ({@link #origin}); such an extent is reference counted by the store.
 */
public final class BlockTable {
    private int[] device;
    private long[] offset;
    private int[] length;
    private int[] crc;
    private boolean[] committed;
    /** Per block, the checksum identity of a shared block's writer; null for this sequence's own. */
    private EntryChecksum[] origin;
    private int size;

    public BlockTable(int initialCapacity) {
        int c = Math.max(4, initialCapacity);
        device = new int[c];
        offset = new long[c];
        length = new int[c];
        crc = new int[c];
        committed = new boolean[c];
        origin = new EntryChecksum[c];
    }

    public int size() {
        return size;
    }

    /** Makes room for blocks {@code 0..blocks-1}; new ones have no extent. */
    public void ensureBlocks(int blocks) {
        if (blocks > device.length) {
            int c = Math.max(blocks, device.length * 2);
            device = Arrays.copyOf(device, c);
            offset = Arrays.copyOf(offset, c);
            length = Arrays.copyOf(length, c);
            crc = Arrays.copyOf(crc, c);
            committed = Arrays.copyOf(committed, c);
            origin = Arrays.copyOf(origin, c);
        }
        for (int b = size; b < blocks; b++) {
            device[b] = -1;
        }
        size = Math.max(size, blocks);
    }

    public void set(int block, int dev, long off, int len, int checksum, boolean isCommitted) {
        ensureBlocks(block + 1);
        device[block] = dev;
        offset[block] = off;
        length[block] = len;
        crc[block] = checksum;
        committed[block] = isCommitted;
        origin[block] = null;
    }

    /**
     * Block {@code block} is an extent shared from another sequence, whose checksums
     * are {@code writer}'s (the block's {@link #origin}).
     */
    public void setShared(int block, int dev, long off, int len, int checksum, boolean isCommitted,
            EntryChecksum writer) {
        set(block, dev, off, len, checksum, isCommitted);
        origin[block] = java.util.Objects.requireNonNull(writer, "writer");
    }

    /** Whether block {@code block}'s extent is shared from another sequence (forked). */
    public boolean shared(int block) {
        return block < size && origin[block] != null;
    }

    /**
     * How block {@code block} was checksummed: by the sequence that wrote it when it is shared, else
     * {@code own} (the table's sequence's checksum).
     */
    public EntryChecksum checksum(int block, EntryChecksum own) {
        EntryChecksum o = origin[block];
        return o != null ? o : own;
    }

    /** Whether any block is shared (its manifest then needs format version 7). */
    public boolean anyShared() {
        for (int b = 0; b < size; b++) {
            if (origin[b] != null) {
                return true;
            }
        }
        return false;
    }

    /** Forgets block {@code block}'s extent (its tokens moved to the cluster layout). */
    public void clear(int block) {
        device[block] = -1;
        committed[block] = false;
        origin[block] = null;
    }

    public boolean hasExtent(int block) {
        return block < size && device[block] >= 0;
    }

    public int device(int block) {
        return device[block];
    }

    public long offset(int block) {
        return offset[block];
    }

    public int length(int block) {
        return length[block];
    }

    public int crc(int block) {
        return crc[block];
    }

    public boolean committed(int block) {
        return committed[block];
    }

    /** An independent copy (manifests keep a snapshot while the writer goes on). */
    public BlockTable copy() {
        BlockTable t = new BlockTable(size);
        for (int b = 0; b < size; b++) {
            t.set(b, device[b], offset[b], length[b], crc[b], committed[b]);
            t.origin[b] = origin[b];
        }
        t.ensureBlocks(size);
        return t;
    }

    /** Rewrites device numbers through {@code map} (manifest-local to engine indices). */
    public void remapDevices(int[] map) {
        for (int b = 0; b < size; b++) {
            if (device[b] >= 0) {
                device[b] = map[device[b]];
            }
        }
    }

    public void markAllCommitted() {
        for (int b = 0; b < size; b++) {
            if (device[b] >= 0) {
                committed[b] = true;
            }
        }
    }
}

package io.kvoffload.testing;

import io.kvoffload.KvConfig;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.DevicePool;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;

/**
 * Damage to stored bytes as a failing SSD would do it: four bytes overwritten in a device's pool
 * file, past the start of a record, so the record's checksum no longer matches.
 */
public final class PoolDamage {
    private PoolDamage() {}

    /** Overwrites four bytes of device {@code device}'s pool file, 10 bytes after {@code offset}. */
    public static void damage(KvConfig cfg, int device, long offset) {
        try (FileChannel ch = FileChannel.open(cfg.ssdDirectories().get(device).resolve(DevicePool.POOL_FILE),
                StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(new byte[] {1, 2, 3, 4}), offset + 10);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * Damages the first stored copy of {@code token}'s layer-0 entry in committed sequence {@code id}
     * (its cluster layout), on the device that copy is on.
     */
    public static void damageEntry(KvEngine e, KvConfig cfg, String id, int token) {
        int device;
        long offset;
        try (KvSequence s = e.openSequence(id)) {
            ClusterLayout cl = Layouts.clusterLayout(s, 0);
            int entry = cl.replica(token, 0);
            device = cl.entryDevice(entry);
            offset = cl.entryOffset(entry);
        }
        damage(cfg, device, offset);
    }
}

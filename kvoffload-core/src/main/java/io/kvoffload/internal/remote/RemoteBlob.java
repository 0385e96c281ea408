package io.kvoffload.internal.remote;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

/**
 * The frame of every blob the engine stores remotely: a 16-byte header (magic, format version,
 * payload length, CRC32C) and the payload. The CRC covers the key as well as the payload, so a blob
 * that was corrupted, truncated, or stored under another key fails verification and is treated as a
 * miss: a remote read never returns wrong data.
 */
public final class RemoteBlob {
    public static final int HEADER = 16;
    private static final int MAGIC = 0x4B564F52; // "KVOR"
    private static final int VERSION = 1;

    private RemoteBlob() {}

    /** A blob for a payload of {@code payloadBytes}, to be filled at {@link #HEADER} and then {@link #seal}ed. */
    public static byte[] allocate(int payloadBytes) {
        return new byte[HEADER + payloadBytes];
    }

    /** Writes the header of {@code blob}, whose payload is filled, for storing under {@code key}. */
    public static byte[] seal(String key, byte[] blob) {
        ByteBuffer b = ByteBuffer.wrap(blob).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0, MAGIC).putInt(4, VERSION).putInt(8, blob.length - HEADER).putInt(12, crc(key, blob));
        return blob;
    }

    /**
     * Whether {@code blob} read from {@code key} is whole and unchanged, with a payload of
     * {@code payloadBytes} (or any length when negative).
     */
    public static boolean verify(String key, byte[] blob, int payloadBytes) {
        if (blob == null || blob.length < HEADER) {
            return false;
        }
        ByteBuffer b = ByteBuffer.wrap(blob).order(ByteOrder.LITTLE_ENDIAN);
        return b.getInt(0) == MAGIC && b.getInt(4) == VERSION && b.getInt(8) == blob.length - HEADER
                && (payloadBytes < 0 || payloadBytes == blob.length - HEADER) && b.getInt(12) == crc(key, blob);
    }

    private static int crc(String key, byte[] blob) {
        CRC32C c = new CRC32C();
        c.update(key.getBytes(StandardCharsets.UTF_8));
        c.update(blob, HEADER, blob.length - HEADER);
        return (int) c.getValue();
    }
}

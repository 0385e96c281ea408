package io.kvoffload.internal.remote;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The small records beside the blocks' data: the block record (layer count, block size and the
 * block's token ids), whose presence says a block was completely published and whose token ids let a
 * reader check that the block really holds its prompt's tokens (hash collisions then cannot return
 * another prompt's KV); and the sequence record (fingerprint, block size and token ids of a
 * published sequence's full blocks). Both are framed and checksummed by {@link RemoteBlob}.
 */
final class RemoteRecords {
    private RemoteRecords() {}

    static byte[] block(String key, int layers, int[] tokens, int from, int blockTokens) {
        byte[] blob = RemoteBlob.allocate(8 + 4 * blockTokens);
        ByteBuffer b = ByteBuffer.wrap(blob, RemoteBlob.HEADER, blob.length - RemoteBlob.HEADER)
                .order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(layers).putInt(blockTokens);
        for (int i = 0; i < blockTokens; i++) {
            b.putInt(tokens[from + i]);
        }
        return RemoteBlob.seal(key, blob);
    }

    /**
     * Whether {@code blob} read from {@code key} is a whole block record for {@code layers} layers
     * holding exactly {@code prompt[from, from + blockTokens)}.
     */
    static boolean blockMatches(String key, byte[] blob, int layers, int[] prompt, int from, int blockTokens) {
        if (!RemoteBlob.verify(key, blob, 8 + 4 * blockTokens)) {
            return false;
        }
        ByteBuffer b = ByteBuffer.wrap(blob, RemoteBlob.HEADER, blob.length - RemoteBlob.HEADER)
                .order(ByteOrder.LITTLE_ENDIAN);
        if (b.getInt() != layers || b.getInt() != blockTokens) {
            return false;
        }
        for (int i = 0; i < blockTokens; i++) {
            if (b.getInt() != prompt[from + i]) {
                return false;
            }
        }
        return true;
    }

    /**
     * The token ids of a sequence record read from {@code key}, or null unless it is whole and for
     * {@code fingerprint} and {@code blockTokens}.
     */
    static int[] sequenceTokens(String key, byte[] blob, String fingerprint, int blockTokens) {
        if (!RemoteBlob.verify(key, blob, -1)) {
            return null;
        }
        ByteBuffer b = ByteBuffer.wrap(blob, RemoteBlob.HEADER, blob.length - RemoteBlob.HEADER)
                .order(ByteOrder.LITTLE_ENDIAN);
        byte[] fp = fingerprint.getBytes(StandardCharsets.UTF_8);
        if (b.remaining() < 12 + fp.length || b.getInt() != fp.length) {
            return null;
        }
        byte[] got = new byte[fp.length];
        b.get(got);
        if (!Arrays.equals(got, fp) || b.getInt() != blockTokens) {
            return null;
        }
        int count = b.getInt();
        if (count < 0 || b.remaining() != 4L * count) {
            return null;
        }
        int[] tokens = new int[count];
        for (int i = 0; i < count; i++) {
            tokens[i] = b.getInt();
        }
        return tokens;
    }

    static byte[] sequence(String key, String fingerprint, int blockTokens, int[] tokens, int count) {
        byte[] fp = fingerprint.getBytes(StandardCharsets.UTF_8);
        byte[] blob = RemoteBlob.allocate(12 + fp.length + 4 * count);
        ByteBuffer b = ByteBuffer.wrap(blob, RemoteBlob.HEADER, blob.length - RemoteBlob.HEADER)
                .order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(fp.length).put(fp).putInt(blockTokens).putInt(count);
        for (int t : Arrays.copyOf(tokens, count)) {
            b.putInt(t);
        }
        return RemoteBlob.seal(key, blob);
    }
}

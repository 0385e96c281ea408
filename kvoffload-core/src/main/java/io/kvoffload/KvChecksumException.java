package io.kvoffload;

/**
 * Bytes read back from a device did not match the checksum recorded when they were written. The
 * checksum covers what the bytes are as well as the bytes (a CRC32C seeded with the sequence, the
 * layer and the token position), so this is also raised for intact bytes that belong to another
 * position or sequence, e.g. when a manifest points at the wrong extent. The library never returns
 * such bytes; the message names the device, the sequence, the layer and the token range wanted.
 */
public class KvChecksumException extends KvException {
    private final int device;
    private final String sequenceId;
    private final int layer;
    private final int fromToken;
    private final int toToken;

    public KvChecksumException(int device, String devicePath, String sequenceId, int layer, int fromToken,
            int toToken, int expectedCrc, int actualCrc) {
        super("checksum mismatch on device " + device + " (" + devicePath + "), sequence " + sequenceId
                + ", layer " + layer + ", tokens " + fromToken + ".." + (toToken - 1) + ": expected CRC32C "
                + Integer.toHexString(expectedCrc) + ", read " + Integer.toHexString(actualCrc));
        this.device = device;
        this.sequenceId = sequenceId;
        this.layer = layer;
        this.fromToken = fromToken;
        this.toToken = toToken;
    }

    /**
     * No copy of tokens {@code fromToken..toToken-1} verified: {@code message} names every copy
     * tried; {@link #device()} is the one read first.
     */
    public KvChecksumException(String message, int device, String sequenceId, int layer, int fromToken, int toToken) {
        super(message);
        this.device = device;
        this.sequenceId = sequenceId;
        this.layer = layer;
        this.fromToken = fromToken;
        this.toToken = toToken;
    }

    public int device() {
        return device;
    }

    public String sequenceId() {
        return sequenceId;
    }

    public int layer() {
        return layer;
    }

    /** First token of the damaged extent. */
    public int fromToken() {
        return fromToken;
    }

    /** One past the last token of the damaged extent. */
    public int toToken() {
        return toToken;
    }
}

package io.kvoffload.internal.remote;

import java.util.HexFormat;

/**
 * The key scheme (docs/remote.md). A block is named by the prefix hash chain value of the prefix it
 * ends ({@code hᵢ}, which covers the shape fingerprint with dtype and layout version and every token
 * from position 0), so engines with the same prompt prefix produce the same keys:
 * <ul>
 *   <li>{@code <prefix>blk:<hex hᵢ>:<layer>}: that block's K then V of one layer, token-major;</li>
 *   <li>{@code <prefix>blk:<hex hᵢ>:rec}: the block record (its token ids and layer count), written
 *       after every layer, so a present record means the block was completely published;</li>
 *   <li>{@code <prefix>seq:<hex hₙ>}: the sequence record (fingerprint, block size and the tokens
 *       of its full blocks), written after all of a sequence's blocks.</li>
 * </ul>
 * No hash tags: the blocks of one prefix spread over every master of the cluster.
 */
final class RemoteKeys {
    private static final HexFormat HEX = HexFormat.of();
    private final String prefix;

    RemoteKeys(String prefix) {
        this.prefix = prefix;
    }

    String layer(byte[] chain, int layer) {
        return prefix + "blk:" + HEX.formatHex(chain) + ":" + layer;
    }

    String blockRecord(byte[] chain) {
        return prefix + "blk:" + HEX.formatHex(chain) + ":rec";
    }

    String sequenceRecord(byte[] lastChain) {
        return prefix + "seq:" + HEX.formatHex(lastChain);
    }

    /** The local id a pulled prefix is stored under: one per remote prefix, so pulling twice finds the first copy. */
    static String localId(byte[] lastChain) {
        return "remote-" + HEX.formatHex(lastChain, 0, 20);
    }
}

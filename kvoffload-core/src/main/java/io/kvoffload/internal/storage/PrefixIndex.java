package io.kvoffload.internal.storage;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

/**
 * Prefix lookup (SSD-backed PagedAttention [SSD-PagedAttention §1.5, §2.2]): every full block of a
 * committed sequence is keyed by a hash chain {@code h₀ = H(fingerprint)}, {@code hᵢ₊₁ = H(hᵢ ‖
 * tokens of block i)}, so equal keys mean equal fingerprint and equal tokens from position 0. The
 * longest chain that matches a prompt names the sequences holding that prefix; the caller still
 * compares token ids, so even a hash collision cannot return another prompt's KV.
 */
public final class PrefixIndex {
    private record Key(long a, long b, long c, long d) {}

    private final Map<Key, Set<String>> blocks = new HashMap<>();

    /** Hash chain keys of the full blocks of {@code tokens}. */
    static Key[] chain(String fingerprint, int[] tokens, int count, int blockTokens) {
        byte[][] hashes = chainHashes(fingerprint, tokens, count, blockTokens);
        Key[] keys = new Key[hashes.length];
        for (int b = 0; b < hashes.length; b++) {
            ByteBuffer hb = ByteBuffer.wrap(hashes[b]);
            keys[b] = new Key(hb.getLong(), hb.getLong(), hb.getLong(), hb.getLong());
        }
        return keys;
    }

    /**
     * The chain's SHA-256 values {@code h₁..hₙ} of the full blocks among the first {@code count}
     * tokens: {@code hᵢ} names the prefix of {@code i} blocks. The remote tier keys blocks by them
     * too, so engines with the same prompt prefix and fingerprint share blocks.
     */
    public static byte[][] chainHashes(String fingerprint, int[] tokens, int count, int blockTokens) {
        MessageDigest md = sha256();
        byte[] h = md.digest(fingerprint.getBytes(StandardCharsets.UTF_8));
        int full = count / blockTokens;
        byte[][] out = new byte[full][];
        ByteBuffer buf = ByteBuffer.allocate(blockTokens * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (int b = 0; b < full; b++) {
            buf.clear();
            for (int i = 0; i < blockTokens; i++) {
                buf.putInt(tokens[b * blockTokens + i]);
            }
            md.update(h);
            md.update(buf.array());
            h = md.digest();
            out[b] = h;
        }
        return out;
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every JDK", e);
        }
    }

    public void add(String id, String fingerprint, int[] tokens, int blockTokens) {
        for (Key k : chain(fingerprint, tokens, tokens.length, blockTokens)) {
            blocks.computeIfAbsent(k, x -> new LinkedHashSet<>()).add(id);
        }
    }

    public void remove(String id, String fingerprint, int[] tokens, int blockTokens) {
        for (Key k : chain(fingerprint, tokens, tokens.length, blockTokens)) {
            Set<String> s = blocks.get(k);
            if (s != null) {
                s.remove(id);
                if (s.isEmpty()) {
                    blocks.remove(k);
                }
            }
        }
    }

    /** Candidate sequences sharing the longest run of full blocks with {@code prompt}, newest last. */
    public Set<String> longestChain(String fingerprint, int[] prompt, int blockTokens) {
        Set<String> best = Set.of();
        for (Key k : chain(fingerprint, prompt, prompt.length, blockTokens)) {
            Set<String> s = blocks.get(k);
            if (s == null || s.isEmpty()) {
                break;
            }
            best = s;
        }
        return best;
    }
}

package io.kvoffload.internal.sequence;

import io.kvoffload.internal.util.Checks;
import java.util.Arrays;

/** The token ids of a sequence, in position order: the positions its layers' KV is appended for. */
public final class TokenIds {
    /** The longest sequence: array sizes stay clear of the VM's limit. */
    private static final int MAX_TOKENS = Integer.MAX_VALUE - 8;

    private int[] ids;
    private int count;

    /** No tokens yet. */
    public TokenIds() {
        this.ids = new int[256];
    }

    /** The committed ids {@code ids} (copied). */
    public TokenIds(int[] ids) {
        this.ids = ids.clone();
        this.count = ids.length;
    }

    public int count() {
        return count;
    }

    /** A copy of the ids. */
    public int[] toArray() {
        return Arrays.copyOf(ids, count);
    }

    /** The backing array: ids {@code [0, count())} are valid. */
    int[] array() {
        return ids;
    }

    /**
     * Appends {@code more}.
     *
     * @throws IllegalArgumentException if an id is negative or the sequence would grow too long
     */
    public void append(int[] more) {
        Checks.notNull("ids", more);
        for (int i = 0; i < more.length; i++) {
            if (more[i] < 0) {
                throw new IllegalArgumentException("ids[" + i + "] = " + more[i] + " is not a token id; allowed: 0.."
                        + Integer.MAX_VALUE);
            }
        }
        if ((long) count + more.length > MAX_TOKENS) {
            throw new IllegalArgumentException("appending " + more.length + " tokens to " + count
                    + " exceeds the maximum sequence length " + MAX_TOKENS);
        }
        if (count + more.length > ids.length) {
            ids = Arrays.copyOf(ids, Math.max(count + more.length, ids.length * 2));
        }
        System.arraycopy(more, 0, ids, count, more.length);
        count += more.length;
    }
}

package io.kvoffload.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import java.lang.foreign.MemorySegment;
import java.util.BitSet;

/** Checks on the views a decoder hands out. */
public final class KvViews {
    private KvViews() {}

    /**
     * Rows are distinct positions whose K and V, head by head, equal the source exactly.
     *
     * @param expected the layer's K bytes and V bytes, token-major ({@code [token][kvHead][dim]})
     * @return the positions the view holds
     */
    public static BitSet assertBitExact(KvView v, byte[][] expected) {
        return assertBitExact(v, expected, false);
    }

    /**
     * As {@link #assertBitExact(KvView, byte[][])}; with {@code heldOnly}, only the KV heads each row
     * holds ({@link KvView#headMask}) are compared: the others are undefined in a per-head view.
     */
    public static BitSet assertBitExact(KvView v, byte[][] expected, boolean heldOnly) {
        KvShape shape = v.shape();
        int half = shape.halfEntryBytes();
        int row = shape.headDim() * shape.dtype().bytes();
        BitSet seen = new BitSet();
        MemorySegment k = MemorySegment.ofArray(expected[0]);
        MemorySegment val = MemorySegment.ofArray(expected[1]);
        for (int r = 0; r < v.tokenCount(); r++) {
            int p = v.position(r);
            assertTrue(!seen.get(p), "position " + p + " appears twice");
            seen.set(p);
            long held = heldOnly ? PerHeadViews.heldHeads(v, r) : -1L;
            for (int h = 0; h < shape.kvHeads(); h++) {
                if ((held >>> h & 1) == 0) {
                    continue;
                }
                long at = (long) p * half + (long) h * row;
                assertEquals(-1, v.keys(h).asSlice((long) r * row, row).mismatch(k.asSlice(at, row)),
                        "K of " + p + " head " + h);
                assertEquals(-1, v.values(h).asSlice((long) r * row, row).mismatch(val.asSlice(at, row)),
                        "V of " + p + " head " + h);
            }
        }
        return seen;
    }
}

package io.kvoffload.internal.kvswap;

import static io.kvoffload.internal.kvswap.KvSwapFixtures.assertMessage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvoffload.internal.select.TokenSelector;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class RollingBufferTest {

    @Test
    void holdsTheNewestTokensUntilAGroupIsFull() {
        RollingBuffer rb = new RollingBuffer(4, 1);
        rb.reset(10); // prefill of 10: groups 0 and 1 offloaded, tokens 8 and 9 stay
        assertEquals(8, rb.start());
        assertEquals(10, rb.end());
        assertEquals(0, rb.fullGroups());
        assertEquals(2, rb.append()); // token 10 at ring slot 10 mod 4
        assertEquals(3, rb.append()); // token 11
        assertEquals(1, rb.fullGroups());
        assertEquals(2, rb.oldestGroup());
        assertMessage(IllegalStateException.class, rb::append, "rolling buffer is full", "offload group 2");
        rb.releaseGroup();
        assertEquals(12, rb.start());
        assertEquals(0, rb.size());
        assertMessage(IllegalStateException.class, rb::releaseGroup, "no complete group", "0 of 4");
        assertEquals(0, rb.append()); // token 12
        assertEquals(0, rb.slotOf(12));
        assertEquals(0, rb.blockOf(12));
        assertMessage(() -> rb.slotOf(11), "token = 11", "allowed: 12..12");
    }

    @Test
    void aSecondBlockLetsTheFlushRunBehind() {
        RollingBuffer rb = new RollingBuffer(2, 2);
        rb.reset(0);
        for (int t = 0; t < 4; t++) {
            assertEquals(t, rb.append());
        }
        assertEquals(2, rb.fullGroups());
        assertEquals(1, rb.blockOf(3));
        rb.releaseGroup();
        assertEquals(0, rb.append()); // token 4 reuses ring slot 0
        assertEquals(0, rb.blockOf(4));
        int[] out = new int[3];
        assertEquals(3, rb.positions(out, 0));
        assertArrayEquals(new int[] {2, 3, 4}, out);
    }

    @Test
    void addToDropsUnoffloadedPositionsAndAppendsTheBuffer() {
        RollingBuffer rb = new RollingBuffer(4, 1);
        rb.reset(14); // holds 12, 13
        int[] positions = {0, 1, 2, 3, 12, 13, 14, 15, -1, -1};
        int n = rb.addTo(positions, 8);
        assertEquals(6, n);
        assertArrayEquals(new int[] {0, 1, 2, 3, 12, 13}, Arrays.copyOf(positions, n));
        assertMessage(() -> rb.addTo(new int[5], 5), "positions.length = 5", "at least 7");
    }

    @Test
    void wrapsAnySelector() {
        // The predictor over 12 offloaded tokens (3 groups of 4) plus 2 rolling tokens.
        LowRankAdapter a = LowRankAdapter.of(1, 1, 1, new float[] {1});
        CompressedKCache c = new CompressedKCache(a);
        c.append(new float[] {0, 0, 0, 0, 5, 0, 0, 0, 1, 1, 1, 1}, 0, 12);
        RollingBuffer rb = new RollingBuffer(4, 1);
        rb.reset(14);
        TokenSelector s = rb.around(new GroupPredictor(c, 1, 4));
        assertEquals("kvswap+rolling", s.name());
        assertEquals(4 + 4, s.maxSelected(4));
        int[] out = new int[s.maxSelected(4)];
        int n = s.select(new float[] {1}, 4, out);
        assertArrayEquals(new int[] {4, 5, 6, 7, 12, 13}, Arrays.copyOf(out, n));
        assertEquals(12 * 4 + 4, s.indexBytes());
    }

    @Test
    void rejectsBadArguments() {
        assertMessage(() -> new RollingBuffer(0, 1), "groupSize = 0", "allowed: 1..4096");
        assertMessage(() -> new RollingBuffer(4, 0), "capacityGroups = 0", "allowed: 1..1024");
        RollingBuffer rb = new RollingBuffer(4, 1);
        assertMessage(() -> rb.reset(-1), "totalTokens = -1", "allowed: 0..1073741824");
        assertMessage(() -> rb.slotOf(0), "token = 0", "none: the buffer is empty");
        assertMessage(() -> rb.positions(new int[0], 1), "out: offset 1 + length 0", "allowed: 0..0");
    }
}

package io.kvoffload.internal.decode;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.dram.DramPool;
import io.kvoffload.internal.elastic.ElasticDramPool;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * The window on elastic units: whatever the appends and slides, every held token's K and V read back
 * as appended (no unit is reused while it holds a token, nothing moves), the window holds only the
 * units its blocks need, and sliding past everything gives every unit back.
 */
class DramWindowProperties {

    @Property(tries = 60)
    void appendsAndSlidesKeepEveryTokenAndReturnUnits(@ForAll @IntRange(min = 8, max = 200) int half,
            @ForAll @IntRange(min = 0, max = 4) int sinks, @ForAll @IntRange(min = 0, max = 50) int start,
            @ForAll @IntRange(min = 0, max = 1 << 20) int seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int h = half & -4; // whole ints
        try (DramPool dram = new DramPool(8L << 20, 1L << 20);
                ElasticDramPool pool = new ElasticDramPool(dram, 8L << 20, 16L << 10);
                Arena arena = Arena.ofConfined()) {
            int first = Math.max(start, sinks);
            DramWindow w = new DramWindow(pool, dram, h, sinks, first, rnd.nextInt(64));
            MemorySegment k = arena.allocate(h);
            MemorySegment v = arena.allocate(h);
            for (int t = 0; t < sinks; t++) {
                fill(k, t, 0);
                fill(v, t, 1);
                w.putSink(t, k, 0, v, 0);
            }
            long unit = pool.register(2L * h).unitBytes();
            int perUnit = (int) (unit / (2L * h));
            for (int op = 0; op < 300; op++) {
                if (rnd.nextInt(4) == 0 && w.end() > w.start()) {
                    w.slide(w.start() + rnd.nextInt(w.end() - w.start() + 1));
                } else {
                    fill(k, w.end(), 0);
                    fill(v, w.end(), 1);
                    w.append(k, 0, v, 0);
                }
                for (int t = 0; t < w.end(); t++) {
                    if (!w.contains(t)) {
                        continue;
                    }
                    assertEquals(t, w.keySegment(t).get(ValueLayout.JAVA_INT_UNALIGNED, w.keyOffset(t) + 4L * (h / 8)),
                            "K of token " + t);
                    assertEquals(~t, w.valueSegment(t).get(ValueLayout.JAVA_INT_UNALIGNED,
                            w.valueOffset(t) + 4L * (h / 8)), "V of token " + t);
                }
                long blocks = w.end() == w.start() ? 0
                        : (w.end() - 1) / perUnit - w.start() / perUnit + 1;
                assertEquals(blocks * unit, pool.usedBytes(), "the window holds exactly the units of its blocks");
            }
            w.slide(w.end());
            assertEquals(0, pool.usedUnits(), "a window slid past every token holds no unit");
            assertEquals(0, pool.reservedBytes(), "and the pool no chunk");
            w.close();
            assertEquals(0, dram.inUseBytes(), "the sinks' slot went back too");
        }
    }

    /** Token t's K half is all t, its V half all ~t. */
    private static void fill(MemorySegment s, int t, int which) {
        for (long i = 0; i + 4 <= s.byteSize(); i += 4) {
            s.set(ValueLayout.JAVA_INT_UNALIGNED, i, which == 0 ? t : ~t);
        }
    }
}

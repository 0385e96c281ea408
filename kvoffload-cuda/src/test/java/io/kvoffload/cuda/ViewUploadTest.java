package io.kvoffload.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import io.kvoffload.strategy.swarm.Swarm;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.KvConfig;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.cuda.bindings.Bounds;
import io.kvoffload.testing.PerHeadViews;
import io.kvoffload.testing.TestEngines;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The copy plan of a KvView upload, on real views from a real decoder (no GPU needed): which byte
 * ranges go where, that only the valid rows move, and that K and V of every head go in one strided
 * copy. The plan is also carried out on the host, into a stand-in for the device slot, and the slot
 * checked bit-exact against the stored data.
 */
class ViewUploadTest {
    static final KvShape SHAPE = new KvShape(2, 8, 2, 64, DType.BF16); // 128-byte rows
    static final int TOKENS = 1024;
    static final int MAX_TOKENS = 256;

    @TempDir
    Path root;

    @Test
    void copiesOnlyTheValidRowsToTheDeviceLayoutBitExact() {
        try (KvEngine e = TestEngines.open(DecodedViews.config(root).gpu(KvConfig.Gpu.OFF).build())) {
            DecodedViews.store(e, "s", SHAPE, TOKENS);
        }
        try (KvEngine e = TestEngines.open(DecodedViews.config(root).gpu(KvConfig.Gpu.OFF).build());
                KvSequence s = e.openSequence("s");
                KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).build());
                Arena arena = Arena.ofConfined()) {
            // A first, larger fetch leaves the view's capacity (300 rows) above the next one's 100.
            d.prefetch(1, TestEngines.all(300), 300).await().close();
            int[] pos = distinct(100, new SplittableRandom(5));
            try (KvView view = d.prefetch(1, pos, pos.length).await()) {
                assertEquals(100, view.tokenCount());
                assertTrue(view.keys(0).byteSize() >= 300L * 128, "capacity above the valid rows");
                ViewUpload plan = ViewUpload.plan(view, SHAPE, 16, MAX_TOKENS);
                ViewLayout l = plan.layout();
                assertEquals(new ViewLayout(2, 64, 2, 16, 100), l);
                assertEquals(3, plan.copies().size());

                ViewUpload.RowCopy kv = plan.copies().get(0);
                long width = 100L * 128;
                assertEquals(width, kv.rowBytes());
                assertEquals(0, kv.dstOffset());
                assertEquals(width, kv.dstPitch(), "heads are dense on the device");
                assertEquals(4, kv.rows().length, "2 heads of K, then 2 of V");
                for (int h = 0; h < 2; h++) {
                    assertEquals(view.keys(h).address(), kv.rows()[h].address());
                    assertEquals(view.values(h).address(), kv.rows()[2 + h].address());
                }
                for (MemorySegment r : kv.rows()) {
                    assertEquals(width, r.byteSize(), "only the first tokenCount rows");
                }
                long stride = view.keys(1).address() - view.keys(0).address();
                assertTrue(stride > width, "the head stride follows the capacity, not the token count");
                assertEquals(stride, Bounds.uniformStride(kv.rows(), width),
                        "K and V heads evenly spaced: one cudaMemcpy2DAsync moves them all");

                ViewUpload.RowCopy p = plan.copies().get(1);
                assertEquals(1, p.rows().length);
                assertEquals(view.positions().address(), p.rows()[0].address());
                assertEquals(400, p.rowBytes());
                assertEquals(l.positionsOffset(), p.dstOffset());
                assertEquals(51200, p.dstOffset(), "2 × 2 heads × 100 rows × 128 bytes, 16-aligned");
                ViewUpload.RowCopy t = plan.copies().get(2);
                assertEquals(view.blockTable().address(), t.rows()[0].address());
                assertEquals(4L * 7, t.rowBytes(), "ceil(100 / 16) = 7 blocks");
                assertEquals(l.blockTableOffset(), t.dstOffset());
                assertEquals(51600, t.dstOffset());
                assertEquals(4 * width + 400 + 28, plan.bytes());
                assertTrue(l.totalBytes() <= ViewLayout.capacityBytes(2, 64, 2, 16, MAX_TOKENS));

                // Carry the plan out on the host, as the bindings do on the GPU, into a sentinel-filled slot.
                long cap = ViewLayout.capacityBytes(2, 64, 2, 16, MAX_TOKENS);
                MemorySegment slot = arena.allocate(cap, 256).fill((byte) 0xA5);
                for (ViewUpload.RowCopy c : plan.copies()) {
                    for (int i = 0; i < c.rows().length; i++) {
                        MemorySegment.copy(c.rows()[i], 0, slot, c.dstOffset() + i * c.dstPitch(), c.rowBytes());
                    }
                }
                for (int h = 0; h < 2; h++) {
                    for (int r = 0; r < 100; r++) {
                        int position = view.position(r);
                        assertArrayEquals(DecodedViews.row(SHAPE, 1, position, h, false),
                                bytes(slot, l.keysOffset(h) + r * l.rowBytes(), l.rowBytes()), "K head " + h + " row " + r);
                        assertArrayEquals(DecodedViews.row(SHAPE, 1, position, h, true),
                                bytes(slot, l.valuesOffset(h) + r * l.rowBytes(), l.rowBytes()), "V head " + h + " row " + r);
                    }
                }
                int[] got = new int[100];
                for (int r = 0; r < 100; r++) {
                    got[r] = slot.get(ValueLayout.JAVA_INT, l.positionsOffset() + 4L * r);
                }
                Arrays.sort(got);
                assertArrayEquals(pos, got, "exactly the requested positions");
                for (int b = 0; b < 7; b++) {
                    assertEquals(b, slot.get(ValueLayout.JAVA_INT, l.blockTableOffset() + 4L * b),
                            "the view's table: gathered rows are contiguous, logical block b is physical block b");
                }
                long end = l.blockTableOffset() + 28;
                for (long o = end; o < cap; o++) {
                    assertEquals((byte) 0xA5, slot.get(ValueLayout.JAVA_BYTE, o), "nothing written past the view at " + o);
                }
            }
        }
    }

    @Test
    void viewsThatDoNotFitAreRefusedWithTheNumbers() {
        try (KvEngine e = TestEngines.open(DecodedViews.config(root).gpu(KvConfig.Gpu.OFF).build())) {
            DecodedViews.store(e, "s", SHAPE, 256);
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).build())) {
                KvView view = d.prefetch(0, TestEngines.all(100), 100).await();
                var ex = assertThrows(IllegalArgumentException.class, () -> ViewUpload.plan(view, SHAPE, 16, 50));
                assertTrue(ex.getMessage().contains("holds 100 tokens; allowed: 0..50"), ex.getMessage());
                ex = assertThrows(IllegalArgumentException.class, () -> ViewUpload.plan(view, SHAPE, 32, 256));
                assertTrue(ex.getMessage().contains("blockTokens 16") && ex.getMessage().contains("blockTokens 32"),
                        ex.getMessage());
                KvShape other = new KvShape(2, 8, 4, 64, DType.BF16);
                ex = assertThrows(IllegalArgumentException.class, () -> ViewUpload.plan(view, other, 16, 256));
                assertTrue(ex.getMessage().contains("shape"), ex.getMessage());
                assertThrows(IllegalArgumentException.class, () -> ViewUpload.plan(null, SHAPE, 16, 256));
                view.close();
                var st = assertThrows(IllegalStateException.class, () -> ViewUpload.plan(view, SHAPE, 16, 256));
                assertTrue(st.getMessage().contains("not ready"), st.getMessage());

                try (KvView empty = d.prefetch(0, new int[0], 0).await()) {
                    ViewUpload plan = ViewUpload.plan(empty, SHAPE, 16, 256);
                    assertEquals(0, plan.bytes(), "an empty view moves nothing");
                }
            }
        }
    }

    /**
     * A view with partial rows (a per-head plan under HEAD_SHARDED) uploads its head masks too: a
     * fourth copy, one int64 per valid row straight from the view's DRAM slot to the layout's mask
     * region, which carried out on the host holds exactly {@link KvView#headMask}; the held heads'
     * K/V land as for a whole view. The same positions wanted by every head upload no masks.
     */
    @Test
    void viewsWithPartialRowsUploadTheirHeadMasks() {
        KvShape shape = new KvShape(2, 8, 4, 32, DType.BF16); // 64-byte rows
        PerHeadViews.Script script = new PerHeadViews.Script();
        try (KvEngine e = TestEngines.open(PerHeadViews.config(root, 2).gpu(KvConfig.Gpu.OFF).build());
                Arena arena = Arena.ofConfined()) {
            PerHeadViews.Layer[] stored = PerHeadViews.store(e, "s", shape, 256, 3);
            try (KvSequence s = e.openSequence("s"); KvDecoder d = s.decoder(PerHeadViews.options(script, 4, 16))) {
                int[] pos = {20, 40, 60, 80};
                script.next(pos, new long[] {0b0001, 0b0010, 0b1100, 0b0001}); // 2 groups of 2 heads: some rows half
                try (KvView view = d.prefetch(0, new float[8 * 32]).await()) {
                    assertTrue(view.partialRows());
                    int n = view.tokenCount();
                    assertEquals(24, n, "4 sinks, 4 scripted, 16 window");
                    ViewUpload plan = ViewUpload.plan(view, shape, 16, 256);
                    ViewLayout l = plan.layout();
                    assertTrue(plan.partialRows());
                    assertEquals(4, plan.copies().size(), "K and V, positions, block table, head masks");
                    ViewUpload.RowCopy m = plan.copies().get(3);
                    assertEquals("head masks", m.what());
                    assertEquals(1, m.rows().length);
                    assertEquals(8L * n, m.rowBytes(), "one int64 per valid row");
                    assertEquals(8L * n, m.rows()[0].byteSize(), "only the valid rows' masks");
                    assertTrue(m.rows()[0].isNative(), "straight from the view's (page-locked) DRAM slot");
                    assertEquals(l.headMasksOffset(), m.dstOffset());
                    long tableEnd = l.blockTableOffset() + 4L * l.blockCount();
                    assertTrue(m.dstOffset() >= tableEnd && m.dstOffset() % 8 == 0, "after the block table, aligned");
                    assertTrue(m.dstOffset() + m.rowBytes() <= l.totalBytes(), "inside the layout");
                    assertTrue(l.totalBytes() <= ViewLayout.capacityBytes(4, 32, 2, 16, 256), "inside the slot");
                    assertEquals(2L * 4 * n * 64 + 4L * n + 4L * l.blockCount() + 8L * n, plan.bytes());

                    long cap = ViewLayout.capacityBytes(4, 32, 2, 16, 256);
                    MemorySegment slot = arena.allocate(cap, 256).fill((byte) 0xA5);
                    for (ViewUpload.RowCopy c : plan.copies()) {
                        for (int i = 0; i < c.rows().length; i++) {
                            MemorySegment.copy(c.rows()[i], 0, slot, c.dstOffset() + i * c.dstPitch(), c.rowBytes());
                        }
                    }
                    boolean someHalf = false;
                    for (int r = 0; r < n; r++) {
                        long mask = slot.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN),
                                l.headMasksOffset() + 8L * r);
                        assertEquals(view.headMask(r), mask, "row " + r + "'s mask, little-endian on the device");
                        int position = slot.get(ValueLayout.JAVA_INT, l.positionsOffset() + 4L * r);
                        assertEquals(view.position(r), position);
                        for (int h = 0; h < 4; h++) {
                            if ((mask >>> h & 1) == 0) {
                                someHalf = true;
                                continue; // undefined bytes
                            }
                            long rb = l.rowBytes();
                            long src = ((long) position * 4 + h) * rb;
                            assertArrayEquals(Arrays.copyOfRange(stored[0].keyBytes(), (int) src, (int) (src + rb)),
                                    bytes(slot, l.keysOffset(h) + r * rb, rb), "K head " + h + " row " + r);
                            assertArrayEquals(Arrays.copyOfRange(stored[0].valueBytes(), (int) src, (int) (src + rb)),
                                    bytes(slot, l.valuesOffset(h) + r * rb, rb), "V head " + h + " row " + r);
                        }
                    }
                    assertTrue(someHalf, "some row holds one head group only");
                    for (long o = l.headMasksOffset() + 8L * n; o < cap; o++) {
                        assertEquals((byte) 0xA5, slot.get(ValueLayout.JAVA_BYTE, o), "nothing written past the masks at " + o);
                    }
                }
                long[] whole = new long[pos.length];
                Arrays.fill(whole, io.kvoffload.strategy.FetchPlan.ALL_HEADS);
                script.next(pos, whole);
                try (KvView view = d.prefetch(0, new float[8 * 32]).await()) {
                    assertTrue(!view.partialRows());
                    ViewUpload plan = ViewUpload.plan(view, shape, 16, 256);
                    assertEquals(24, plan.layout().tokens(), "whole rows upload");
                    assertTrue(!plan.partialRows());
                    assertEquals(3, plan.copies().size(), "no head masks for whole rows");
                    for (ViewUpload.RowCopy c : plan.copies()) {
                        assertTrue(c.dstOffset() + c.rowBytes() <= plan.layout().headMasksOffset(), c.what());
                    }
                }
            }
        }
    }

    private static int[] distinct(int n, SplittableRandom rnd) {
        return rnd.ints(0, TOKENS).distinct().limit(n).sorted().toArray();
    }

    private static byte[] bytes(MemorySegment s, long offset, long n) {
        return s.asSlice(offset, n).toArray(ValueLayout.JAVA_BYTE);
    }
}

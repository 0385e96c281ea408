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
import io.kvoffload.cuda.bindings.Cuda;
import io.kvoffload.cuda.bindings.CudaEvent;
import io.kvoffload.cuda.bindings.CudaStream;
import io.kvoffload.cuda.bindings.DeviceMemory;
import io.kvoffload.cuda.bindings.PinnedHostBuffer;
import io.kvoffload.cuda.bindings.SpinKernel;
import io.kvoffload.internal.cache.CostEffectiveness;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs on a GPU; skipped through the probe (reason printed) elsewhere. */
class GpuTierTest {
    @TempDir
    Path dir;

    @BeforeEach
    void gpu() {
        GpuTestSupport.requireGpu();
    }

    private KvConfig config() {
        return KvConfig.builder().ssdDirectories(dir).deviceCapacityBytes(16L << 20).dramBudgetBytes(16L << 20)
                .gpu(KvConfig.Gpu.ON).gpuCacheBudgetBytes(1L << 20).build();
    }

    @Test
    void ssdToDramViewToHbmToHostIsBitExact() throws Exception {
        KvShape shape = ViewUploadTest.SHAPE; // 2 layers, 2 KV heads × 64 BF16: 128-byte rows
        try (KvEngine e = KvEngine.open(viewConfig())) {
            DecodedViews.store(e, "s", shape, 1024);
        }
        int[] pos = {5, 999, 0, 42, 17, 18, 19, 63, 64, 80, 81, 3, 77, 11, 12, 13, 14, 500, 700, 701};
        try (KvEngine e = KvEngine.open(viewConfig());
                KvSequence s = e.openSequence("s"); // reopened: the clustered tokens are read from the SSDs
                KvDecoder d = s.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).build());
                Arena arena = Arena.ofShared()) {
            CudaDeviceTier tier = e.deviceTier().orElseThrow().unwrap(CudaDeviceTier.class);
            try (KvView hostView = d.prefetch(1, pos, pos.length).await(); // SSD -> DRAM
                    LayerStreamBuffer b = tier.layerStreamBuffer(shape, 16, 64, 2);
                    CudaStream kernel = CudaStream.createNonBlocking()) {
                assertTrue(tier.pinnedSlabs() > 0, "the DRAM slabs holding the view are page-locked");
                GpuLayerView view = b.load(hostView); // DRAM -> HBM
                assertEquals(3, view.copyCalls(), "one strided copy for K and V of every head, positions, table");
                assertTrue(!view.partialRows(), "whole rows: no head masks uploaded");
                view.waitOn(kernel.handle());
                ViewLayout lay = view.layout();
                assertEquals(pos.length, lay.tokens());
                MemorySegment back = arena.allocate(lay.totalBytes(), 64);
                Cuda.copyToHostAsync(back, 0, view.memory(), 0, lay.totalBytes(), kernel); // HBM -> host
                view.release(kernel.handle());
                kernel.synchronize();
                for (int h = 0; h < 2; h++) {
                    for (int r = 0; r < pos.length; r++) {
                        int p = hostView.position(r);
                        long off = r * lay.rowBytes();
                        assertArrayEquals(DecodedViews.row(shape, 1, p, h, false), back.asSlice(lay.keysOffset(h) + off,
                                lay.rowBytes()).toArray(ValueLayout.JAVA_BYTE), "K head " + h + " position " + p);
                        assertArrayEquals(DecodedViews.row(shape, 1, p, h, true), back.asSlice(lay.valuesOffset(h) + off,
                                lay.rowBytes()).toArray(ValueLayout.JAVA_BYTE), "V head " + h + " position " + p);
                    }
                }
                for (int r = 0; r < pos.length; r++) {
                    assertEquals(hostView.position(r), back.get(ValueLayout.JAVA_INT, lay.positionsOffset() + 4L * r));
                }
                for (int blk = 0; blk < lay.blockCount(); blk++) {
                    assertEquals(hostView.blockTable().getAtIndex(ValueLayout.JAVA_INT, blk),
                            back.get(ValueLayout.JAVA_INT, lay.blockTableOffset() + 4L * blk));
                }

                // Head 0's keys through the HBM hot cache.
                long bytes = lay.headStride();
                HbmHotCache<DeviceMemory> hot = tier.openHotCache(256, 8, 4, shape.entryBytes(), item -> bytes,
                        CostEffectiveness.savedIoPerEntry(100, 10));
                hot.step(new int[] {0}, 1);
                assertEquals(1, hot.admittedCount());
                hot.upload(0, hostView.keys(0), 0);
                MemorySegment back2 = arena.allocate(bytes, 64);
                hot.download(0, back2, 0);
                assertArrayEquals(hostView.keys(0).asSlice(0, bytes).toArray(ValueLayout.JAVA_BYTE),
                        back2.toArray(ValueLayout.JAVA_BYTE));
                assertTrue(tier.hotBlockAddress(hot.block(0, 0)) != 0);

                // A load that comes round to a slot whose view was never released would race the
                // kernel: refused. Slots go round-robin, so the other slots are loaded (and released)
                // first; the first real-GPU run (H100) showed that a fixed count of loads misses it.
                GpuLayerView unreleased = b.load(hostView);
                for (int i = 1; i < b.depth(); i++) {
                    b.load(hostView).release(kernel.handle());
                }
                IllegalStateException refused = assertThrows(IllegalStateException.class, () -> b.load(hostView));
                assertTrue(refused.getMessage().contains("never released"), refused.getMessage());
                unreleased.release(kernel.handle());
                b.synchronize(); // the copies have read the KvView: it may be closed now
            }
        }
    }

    /**
     * A view with partial rows (per-head script under HEAD_SHARDED, GPU tier on) loads with a fourth
     * copy, the head masks, which read back from HBM equal {@link KvView#headMask}; every held
     * head's K/V reads back as stored.
     */
    @Test
    void partialRowsUploadTheirHeadMasksBitExact() {
        KvShape shape = new KvShape(2, 8, 4, 32, DType.BF16);
        io.kvoffload.testing.PerHeadViews.Script script = new io.kvoffload.testing.PerHeadViews.Script();
        try (KvEngine e = io.kvoffload.testing.TestEngines.open(io.kvoffload.testing.PerHeadViews.config(dir, 2)
                        .gpu(KvConfig.Gpu.ON).gpuCacheBudgetBytes(1L << 20).build());
                Arena arena = Arena.ofShared()) {
            io.kvoffload.testing.PerHeadViews.Layer[] stored = io.kvoffload.testing.PerHeadViews.store(e, "s", shape,
                    256, 3);
            CudaDeviceTier tier = e.deviceTier().orElseThrow().unwrap(CudaDeviceTier.class);
            try (KvSequence s = e.openSequence("s");
                    KvDecoder d = s.decoder(io.kvoffload.testing.PerHeadViews.options(script, 4, 16));
                    LayerStreamBuffer b = tier.layerStreamBuffer(shape, 16, 64, 2);
                    CudaStream kernel = CudaStream.createNonBlocking()) {
                script.next(new int[] {20, 40, 60, 80}, new long[] {0b0001, 0b0010, 0b1100, 0b0001});
                try (KvView hostView = d.prefetch(0, new float[8 * 32]).await()) {
                    assertTrue(hostView.partialRows());
                    GpuLayerView view = b.load(hostView);
                    assertTrue(view.partialRows());
                    assertEquals(4, view.copyCalls(), "K and V, positions, table, head masks");
                    assertTrue(view.headMasksAddress() != 0 && view.headMasks() != null);
                    view.waitOn(kernel.handle());
                    ViewLayout lay = view.layout();
                    MemorySegment back = arena.allocate(lay.totalBytes(), 64);
                    Cuda.copyToHostAsync(back, 0, view.memory(), 0, lay.totalBytes(), kernel);
                    view.release(kernel.handle());
                    kernel.synchronize();
                    long rb = lay.rowBytes();
                    for (int r = 0; r < lay.tokens(); r++) {
                        long mask = back.get(ValueLayout.JAVA_LONG, lay.headMasksOffset() + 8L * r);
                        assertEquals(hostView.headMask(r), mask, "row " + r);
                        int p = hostView.position(r);
                        for (int h = 0; h < 4; h++) {
                            if ((mask >>> h & 1) != 0) {
                                long src = ((long) p * 4 + h) * rb;
                                assertArrayEquals(java.util.Arrays.copyOfRange(stored[0].keyBytes(), (int) src,
                                        (int) (src + rb)), back.asSlice(lay.keysOffset(h) + r * rb, rb)
                                        .toArray(ValueLayout.JAVA_BYTE), "K head " + h + " row " + r);
                            }
                        }
                    }
                    b.synchronize();
                }
            }
        }
    }

    private KvConfig viewConfig() {
        return DecodedViews.config(dir).gpu(KvConfig.Gpu.ON).gpuCacheBudgetBytes(1L << 20).build();
    }

    @Test
    void copiesOverlapAKernelOnAnotherStream() {
        Cuda.setDevice(0);
        long bytes = 64L << 20;
        try (SpinKernel spin = SpinKernel.load();
                CudaStream kernel = CudaStream.createNonBlocking();
                CudaStream copy = CudaStream.createNonBlocking();
                PinnedHostBuffer host = PinnedHostBuffer.allocate(bytes);
                DeviceMemory dev = DeviceMemory.allocate(bytes);
                CudaEvent start = CudaEvent.create(true);
                CudaEvent end = CudaEvent.create(true);
                CudaEvent copied = CudaEvent.create()) {
            float copyMs = time(start, end, copy, () -> Cuda.copyToDeviceAsync(dev, 0, host.segment(), 0, bytes, copy));
            long cycles = 50_000_000L;
            float spinMs = time(start, end, kernel, () -> spin.launch(cycles, kernel));
            long matched = (long) (cycles * (copyMs / spinMs));
            spinMs = time(start, end, kernel, () -> spin.launch(matched, kernel));
            start.record(kernel);
            spin.launch(matched, kernel);
            copy.waitFor(start);
            Cuda.copyToDeviceAsync(dev, 0, host.segment(), 0, bytes, copy);
            copied.record(copy);
            kernel.waitFor(copied);
            end.record(kernel);
            end.synchronize();
            float both = CudaEvent.elapsedMillis(start, end);
            double hidden = (copyMs + spinMs - both) / copyMs;
            // Each time is one measurement: noise can put "together" under max(copy, kernel), and the
            // share over 100% (the H100 run gave 106%); the assertion only asks for real overlap.
            System.out.printf("copy %.2f ms, kernel %.2f ms, together %.2f ms (serial %.2f, ideal %.2f): %.0f%% of the"
                    + " copy hidden%n", copyMs, spinMs, both, copyMs + spinMs, Math.max(copyMs, spinMs), hidden * 100);
            assertTrue(hidden > 0.5, "copies should overlap the kernel: " + hidden);
        }
    }

    private static float time(CudaEvent start, CudaEvent end, CudaStream s, Runnable work) {
        start.record(s);
        work.run();
        end.record(s);
        end.synchronize();
        return CudaEvent.elapsedMillis(start, end);
    }

    @Test
    void budgetResizeKeepsResidentBlocksBitExact() {
        try (KvEngine e = KvEngine.open(config()); Arena arena = Arena.ofShared()) {
            CudaDeviceTier tier = e.deviceTier().orElseThrow().unwrap(CudaDeviceTier.class);
            tier.resizeHotCache(16 * 256);
            HbmHotCache<DeviceMemory> hot = tier.openHotCache(256, 4, 16, 64, HbmHotCacheTest::itemBytes,
                    CostEffectiveness.savedIoPerEntry(100, 10));
            int[] items = {0, 1, 2, 3, 4, 5, 6, 7};
            for (int r = 0; r < 3; r++) {
                hot.step(items, items.length);
                upload(hot, arena);
            }
            for (int r = 0; r < 5; r++) {
                hot.step(new int[] {0, 5}, 2);
            }
            long[] addr = new long[8];
            for (int item : items) {
                addr[item] = hot.resident(item) ? tier.hotBlockAddress(hot.block(item, 0)) : 0;
            }
            tier.resizeHotCache(4 * 256);
            assertTrue(hot.pool().allocatedBytes() <= 4 * 256);
            for (int item : items) {
                if (hot.resident(item)) {
                    assertEquals(addr[item], tier.hotBlockAddress(hot.block(item, 0)), "item " + item + " did not move");
                    check(hot, item, arena);
                }
            }
            tier.resizeHotCache(32 * 256);
            hot.step(items, items.length);
            upload(hot, arena);
            for (int item : items) {
                assertTrue(hot.resident(item));
                check(hot, item, arena);
            }
        }
    }

    private static void upload(HbmHotCache<DeviceMemory> hot, Arena arena) {
        for (int i = 0; i < hot.admittedCount(); i++) {
            int item = hot.admitted(i);
            byte[] p = HbmHotCacheTest.pattern(item);
            MemorySegment src = arena.allocate(p.length, 64);
            MemorySegment.copy(p, 0, src, ValueLayout.JAVA_BYTE, 0, p.length);
            hot.upload(item, src, 0);
            hot.download(item, arena.allocate(p.length, 64), 0); // drains: src may be dropped
        }
    }

    private static void check(HbmHotCache<DeviceMemory> hot, int item, Arena arena) {
        byte[] p = HbmHotCacheTest.pattern(item);
        MemorySegment dst = arena.allocate(p.length, 64);
        hot.download(item, dst, 0);
        assertArrayEquals(p, dst.toArray(ValueLayout.JAVA_BYTE), "item " + item);
    }
}

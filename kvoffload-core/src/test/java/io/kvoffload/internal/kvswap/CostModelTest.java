package io.kvoffload.internal.kvswap;

import static io.kvoffload.internal.kvswap.KvSwapFixtures.assertMessage;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import org.junit.jupiter.api.Test;

/** {@link FetchCostModel} and {@link MemoryFootprint} on hand-computed numbers. */
class CostModelTest {

    @Test
    void smallReadsAreIopsBoundAndLargeOnesBandwidthBound() {
        FetchCostModel m = new FetchCostModel(1e9, 100_000, 4096);
        // 100 reads of 1 KiB: rounded to 4 KiB; IOPS: 1 ms; bandwidth: 409.6 KB / 1 GB/s = 0.41 ms.
        assertEquals(1e-3, m.seconds(100, 1024), 1e-12);
        // 100 reads of 64 KiB: bandwidth 6.5536 ms beats IOPS 1 ms.
        assertEquals(100 * 65536 / 1e9, m.seconds(100, 65536), 1e-12);
        assertEquals(4096, m.alignedBytes(1));
        assertEquals(0, m.seconds(0, 4096));
        assertEquals(1024 / 1e-5, m.effectiveBandwidth(1024), 1e-3);
        FetchCostModel nvme = FetchCostModel.measuredNvme();
        assertEquals(145_000 * 4096.0, nvme.effectiveBandwidth(4096), 1, "4 KiB reads: 567 MiB/s");
        assertEquals(1.4 * (1L << 30), nvme.effectiveBandwidth(65536), 1);
        assertMessage(() -> new FetchCostModel(0, 1, 4096), "bandwidthBytesPerSecond = 0.0", "finite value > 0");
        assertMessage(() -> new FetchCostModel(1, Double.NaN, 4096), "iops = NaN");
        assertMessage(() -> new FetchCostModel(1, 1, 3000), "readAlignment = 3000", "power of two");
        assertMessage(() -> m.seconds(-1, 10), "reads = -1.0", "allowed: 0.0..");
    }

    @Test
    void llamaFootprint() {
        KvShape llama = KvShape.llama3_8b(); // 32 layers, 8 KV heads × 128, BF16: 4 KiB entries
        MemoryFootprint f = MemoryFootprint.of(llama, 32768, 8, 128, DType.BF16, 4, 100, 1);
        assertEquals(32L * 8 * 32768 * 128 * 2, f.compressedKBytes(), "2 GiB: 1/8 of the 16 GiB full K");
        assertEquals(32L * 8 * 100 * 4 * 4096, f.reuseBufferBytes());
        assertEquals(32L * 8 * 4 * 4096, f.rollingBufferBytes());
        assertEquals(32L * 1024 * 128 * 4, f.adapterBytes());
        assertEquals(f.compressedKBytes() + f.reuseBufferBytes() + f.rollingBufferBytes() + f.adapterBytes(), f.totalBytes());
        assertEquals(8.0, MemoryFootprint.fullKBytes(llama, 32768, 8) / (double) f.compressedKBytes());
        assertMessage(() -> MemoryFootprint.of(llama, 32768, 8, 1025, DType.BF16, 4, 100, 1), "rank = 1025",
                "allowed: 1..1024");
        assertMessage(() -> MemoryFootprint.of(llama, 0, 8, 128, DType.BF16, 4, 100, 1), "maxContext = 0");
    }
}

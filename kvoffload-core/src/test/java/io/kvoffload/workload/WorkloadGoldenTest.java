package io.kvoffload.workload;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import java.util.zip.CRC32;
import org.junit.jupiter.api.Test;

/**
 * The original generator is the family {@code default} and still produces, bit for bit, what it did
 * before the model-like families were added (issue #16): benchmarks and recorded figures stay
 * comparable. The checksums were recorded from the generator as it stood on main (2026-11-24).
 */
class WorkloadGoldenTest {
    private static final KvShape SHAPE = new KvShape(2, 8, 2, 64, DType.BF16);

    @Test
    void defaultFamilyIsTheUnchangedSyntheticWorkload() {
        Workload family = WorkloadFamily.DEFAULT.create(SHAPE, 4096, 24301);
        SyntheticWorkload direct = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, 4096).seed(24301).build());
        assertEquals(checksum(direct), checksum(family));
        assertArrayEquals(direct.query(1, 77), family.query(1, 77));
        assertEquals(GOLDEN, checksum(direct), "SyntheticWorkload's output changed for a fixed seed");
    }

    /** CRC32 over the float bits of layer 1's keys and values (both heads, tokens 0..4095 step 7) and queries 0..9. */
    static long checksum(Workload w) {
        CRC32 crc = new CRC32();
        float[] row = new float[64];
        for (int h = 0; h < 2; h++) {
            for (int t = 0; t < 4096; t += 7) {
                w.layer(1).keys(h, t, 1, row, 0);
                add(crc, row);
                w.layer(1).values(h, t, 1, row, 0);
                add(crc, row);
            }
        }
        for (int s = 0; s < 10; s++) {
            add(crc, w.query(1, s));
        }
        return crc.getValue();
    }

    private static void add(CRC32 crc, float[] a) {
        for (float x : a) {
            int b = Float.floatToRawIntBits(x);
            crc.update(b);
            crc.update(b >>> 8);
            crc.update(b >>> 16);
            crc.update(b >>> 24);
        }
    }

    private static final long GOLDEN = 3635758135L;
}

package io.kvoffload.internal.kvswap;

import static io.kvoffload.internal.kvswap.KvSwapFixtures.assertMessage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

class LowRankAdapterTest {

    @Test
    void handComputedTwoByTwo() {
        // Rows (3, 0) and (0, 1): KᵀK = diag(9, 1), so σ = (3, 1) and V = I up to sign.
        LowRankAdapter a = LowRankAdapter.fit(new float[] {3, 0, 0, 1}, 2, 1, 2, 2);
        assertArrayEquals(new float[] {3, 1}, a.singularValues(), 1e-5f);
        assertEquals(1, Math.abs(a.at(0, 0)), 1e-6);
        assertEquals(0, a.at(1, 0), 1e-6);
        assertEquals(1, Math.abs(a.at(1, 1)), 1e-6);
        assertEquals(2, a.calibrationRows());
        assertEquals(1.0, a.retainedEnergy(), 1e-9);
        LowRankAdapter one = a.truncate(1);
        assertEquals(1, one.rank());
        assertEquals(2.0, one.compressionRatio());
        assertEquals(0.9, one.retainedEnergy(), 1e-6, "9 of 9 + 1");
        float[] out = new float[1];
        one.project(new float[] {2, 5}, 0, out, 0);
        assertEquals(2, Math.abs(out[0]), 1e-6, "the second coordinate is dropped");
    }

    @Test
    void keysInASubspaceAreCapturedExactly() {
        // Keys of 2 heads × 8 dims that span only 3 directions: rank 3 keeps every dot product.
        SplittableRandom rnd = new SplittableRandom(7);
        int d = 16, tokens = 500;
        float[][] basis = {KvSwapFixtures.gaussian(rnd, d), KvSwapFixtures.gaussian(rnd, d), KvSwapFixtures.gaussian(rnd, d)};
        float[] keys = new float[tokens * d];
        for (int t = 0; t < tokens; t++) {
            for (float[] b : basis) {
                float c = (float) rnd.nextGaussian();
                for (int i = 0; i < d; i++) {
                    keys[t * d + i] += c * b[i];
                }
            }
        }
        LowRankAdapter a = LowRankAdapter.fit(keys, tokens, 2, 8, 3);
        assertEquals(1.0, a.retainedEnergy(), 1e-4);
        float[] p = new float[3], q = new float[3];
        for (int t = 0; t + 1 < 50; t++) {
            a.project(keys, t * d, p, 0);
            a.project(keys, (t + 1) * d, q, 0);
            double exact = 0, approx = 0;
            for (int i = 0; i < d; i++) {
                exact += keys[t * d + i] * keys[(t + 1) * d + i];
            }
            for (int j = 0; j < 3; j++) {
                approx += p[j] * q[j];
            }
            assertEquals(exact, approx, 1e-3 * Math.max(1, Math.abs(exact)));
        }
        // The columns are orthonormal.
        for (int c1 = 0; c1 < 3; c1++) {
            for (int c2 = 0; c2 < 3; c2++) {
                double dot = 0;
                for (int i = 0; i < d; i++) {
                    dot += a.at(i, c1) * a.at(i, c2);
                }
                assertEquals(c1 == c2 ? 1 : 0, dot, 1e-5);
            }
        }
        float[] sv = a.singularValues();
        assertTrue(sv[0] >= sv[1] && sv[1] >= sv[2] && sv[2] > 0);
    }

    @Test
    void samplesRowsFromALargeLayer() {
        KvShape shape = new KvShape(1, 4, 2, 16, DType.BF16);
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(shape, 3000).build());
        LowRankAdapter sampled = LowRankAdapter.fit(w.layer(0), 16, 500, 1);
        assertEquals(500, sampled.calibrationRows());
        LowRankAdapter all = LowRankAdapter.fit(w.layer(0), 16, 10_000, 1);
        assertEquals(3000, all.calibrationRows());
        // Same layer through a dense copy and the token-major array: the same adapter.
        DenseLayerKv dense = DenseLayerKv.materialize(w.layer(0), false);
        float[] rows = new float[3000 * 32];
        for (int t = 0; t < 3000; t++) {
            for (int h = 0; h < 2; h++) {
                dense.keys(h, t, 1, rows, t * 32 + h * 16);
            }
        }
        LowRankAdapter direct = LowRankAdapter.fit(rows, 3000, 2, 16, 16);
        assertArrayEquals(all.singularValues(), direct.singularValues(), 1e-3f);
        // A sample of a sixth of the rows finds nearly the same subspace: most energy is kept.
        assertTrue(sampled.retainedEnergy() > 0.9 * all.retainedEnergy(),
                sampled.retainedEnergy() + " vs " + all.retainedEnergy());
    }

    @Test
    void encodeDecodeRoundTrip() {
        LowRankAdapter a = LowRankAdapter.fit(KvSwapFixtures.gaussian(new SplittableRandom(3), 200 * 24), 200, 3, 8, 5);
        byte[] bytes = a.encode();
        assertEquals(LowRankAdapter.HEADER_BYTES + 4 * 24 * 5 + 4 * 5 + 4, bytes.length);
        LowRankAdapter b = LowRankAdapter.decode(bytes);
        assertArrayEquals(a.projection(), b.projection());
        assertArrayEquals(a.singularValues(), b.singularValues());
        assertEquals(a.retainedEnergy(), b.retainedEnergy());
        assertEquals(a.calibrationRows(), b.calibrationRows());
        assertEquals(a.kvHeads(), b.kvHeads());
        assertEquals(a.headDim(), b.headDim());
        assertArrayEquals(bytes, b.encode());
    }

    @Test
    void rejectsCorruptBytes() {
        byte[] good = LowRankAdapter.fit(KvSwapFixtures.gaussian(new SplittableRandom(4), 50 * 8), 50, 1, 8, 4).encode();
        assertMessage(() -> LowRankAdapter.decode(new byte[10]), "bytes.length = 10", "at least");
        byte[] magic = good.clone();
        magic[0] ^= 1;
        assertMessage(() -> LowRankAdapter.decode(magic), "magic = 0x", "allowed: 0x4b565341");
        assertMessage(() -> LowRankAdapter.decode(java.util.Arrays.copyOf(good, good.length - 1)),
                "does not match the header", "allowed: exactly " + good.length);
        byte[] payload = good.clone();
        payload[40] ^= 0x10;
        assertMessage(() -> LowRankAdapter.decode(payload), "checksum mismatch");
        // A header value out of range with a valid checksum: the range check speaks first.
        byte[] version = withCrc(put(good.clone(), 4, 2));
        assertMessage(() -> LowRankAdapter.decode(version), "version = 2", "allowed: 1");
        byte[] rank = withCrc(put(good.clone(), 16, 9));
        assertMessage(() -> LowRankAdapter.decode(rank), "rank = 9", "allowed: 1..8");
        byte[] heads = withCrc(put(good.clone(), 8, 0));
        assertMessage(() -> LowRankAdapter.decode(heads), "kvHeads = 0", "allowed: 1..1024");
        // A NaN in A with a valid checksum.
        byte[] nan = good.clone();
        ByteBuffer.wrap(nan).order(ByteOrder.LITTLE_ENDIAN).putFloat(LowRankAdapter.HEADER_BYTES, Float.NaN);
        assertMessage(() -> LowRankAdapter.decode(withCrc(nan)), "projection[0] = NaN", "finite");
        assertMessage(NullPointerException.class, () -> LowRankAdapter.decode(null), "bytes must not be null");
    }

    private static byte[] put(byte[] b, int at, int value) {
        ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putInt(at, value);
        return b;
    }

    static byte[] withCrc(byte[] b) {
        CRC32C crc = new CRC32C();
        crc.update(b, 0, b.length - 4);
        ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putInt(b.length - 4, (int) crc.getValue());
        return b;
    }

    @Test
    void rejectsBadArguments() {
        float[] keys = new float[4 * 8];
        assertMessage(() -> LowRankAdapter.fit(keys, 4, 1, 8, 0), "rank = 0", "allowed: 1..8");
        assertMessage(() -> LowRankAdapter.fit(keys, 4, 1, 8, 9), "rank = 9", "allowed: 1..8");
        assertMessage(() -> LowRankAdapter.fit(keys, 5, 1, 8, 2), "keys: offset 0 + length 40", "allowed: 0..32");
        assertMessage(() -> LowRankAdapter.fit(keys, 0, 1, 8, 2), "tokens = 0 must be positive");
        assertMessage(() -> LowRankAdapter.calibration(0, 8), "kvHeads = 0", "allowed: 1..1024");
        assertMessage(() -> LowRankAdapter.calibration(8, 4096), "kvHeads × headDim = 32768", "allowed: 1..16384");
        float[] nan = keys.clone();
        nan[5] = Float.NaN;
        assertMessage(() -> LowRankAdapter.fit(nan, 4, 1, 8, 2), "keys[5] = NaN", "finite");
        assertMessage(IllegalStateException.class, () -> LowRankAdapter.calibration(1, 8).fit(2), "no calibration rows");
        assertMessage(() -> LowRankAdapter.of(1, 8, 2, new float[15]), "projection.length = 15", "16");
        LowRankAdapter a = LowRankAdapter.of(1, 8, 2, new float[16]);
        assertMessage(() -> a.truncate(3), "rank = 3", "allowed: 1..2");
        assertMessage(() -> a.at(8, 0), "row = 8", "allowed: 0..7");
    }
}

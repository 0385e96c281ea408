package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.testing.TestEngines;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an integrator expects: float K/V for F16/BF16 sequences (converted, on the sequence and the
 * decoder), the raw-bits overload on the decoder, and opening a sequence for an expected shape.
 */
class ConveniencesTest {
    @TempDir
    Path root;

    KvConfig config() {
        return TestEngines.config(TestEngines.deviceDirs(root, 2), "portable").blockTokens(16).build();
    }

    static float[] floats(int n, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] f = new float[n];
        for (int i = 0; i < n; i++) {
            f[i] = (float) (r.nextGaussian() * 3);
        }
        f[0] = Float.NaN;
        f[1] = 65504f * 4; // beyond F16's range: +infinity in F16, finite in BF16
        f[2] = -0f;
        return f;
    }

    static short[] bits(DType d, float[] f) {
        short[] s = new short[f.length];
        for (int i = 0; i < f.length; i++) {
            s[i] = d == DType.F16 ? Float.floatToFloat16(f[i]) : ElementCodec.toBf16(f[i]);
        }
        return s;
    }

    @Test
    void floatKvIsConvertedForHalfPrecisionSequencesAcrossChunks() throws Exception {
        for (DType d : new DType[] {DType.BF16, DType.F16}) {
            KvShape shape = new KvShape(1, 4, 2, 64, d);
            int row = shape.kvHeads() * shape.headDim();
            int tokens = 1200; // more than one conversion chunk (512 tokens of 128 elements)
            float[] k = floats(tokens * row, 1);
            float[] v = floats(tokens * row, 2);
            try (KvEngine e = KvEngine.open(config()); KvSequence s = e.createSequence("f-" + d, shape)) {
                s.appendTokens(new int[tokens]);
                s.appendKv(0, k, v);
                assertEquals(tokens, s.tokenCount(0));
                s.commit();
                short[] kOut = new short[tokens * row];
                short[] vOut = new short[tokens * row];
                s.read(0, TestEngines.all(tokens), kOut, vOut);
                assertArrayEquals(bits(d, k), kOut, d.toString());
                assertArrayEquals(bits(d, v), vOut, d.toString());
            }
            TestEngines.deleteRecursively(root);
        }
    }

    @Test
    void theDecoderAppendsFloatsAndRawBitsIntoItsWindow() throws Exception {
        KvShape shape = new KvShape(1, 4, 2, 64, DType.BF16);
        int row = shape.kvHeads() * shape.headDim();
        try (KvEngine e = KvEngine.open(config()); KvSequence s = e.createSequence("d", shape)) {
            s.appendTokens(new int[64]);
            s.appendKv(0, floats(64 * row, 3), floats(64 * row, 4));
            s.commit();
            try (KvDecoder d = s.decoder(DecodeOptions.builder().localWindow(16).build())) {
                d.prefetch(0, new float[shape.queryHeads() * shape.headDim()]).await().close();
                float[] k = floats(row, 5);
                float[] v = floats(row, 6);
                s.appendTokens(new int[] {7});
                d.appendKv(0, k, v);
                short[] k2 = bits(DType.BF16, floats(row, 7));
                short[] v2 = bits(DType.BF16, floats(row, 8));
                s.appendTokens(new int[] {8});
                d.appendKv(0, k2, v2);
                try (KvView view = d.prefetch(0, new float[shape.queryHeads() * shape.headDim()]).await()) {
                    int r64 = -1;
                    int r65 = -1;
                    for (int r = 0; r < view.tokenCount(); r++) {
                        r64 = view.position(r) == 64 ? r : r64;
                        r65 = view.position(r) == 65 ? r : r65;
                    }
                    assertTrue(r64 >= 0 && r65 >= 0, "the appended tokens are in the window");
                    short[] want = bits(DType.BF16, k);
                    for (int h = 0; h < shape.kvHeads(); h++) {
                        for (int i = 0; i < shape.headDim(); i++) {
                            long at = ((long) r64 * shape.headDim() + i) * 2;
                            assertEquals(want[h * shape.headDim() + i], view.keys(h).get(ValueLayout.JAVA_SHORT_UNALIGNED, at));
                            long at2 = ((long) r65 * shape.headDim() + i) * 2;
                            assertEquals(v2[h * shape.headDim() + i], view.values(h).get(ValueLayout.JAVA_SHORT_UNALIGNED, at2));
                        }
                    }
                }
                IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                        () -> d.appendKv(0, new float[row + 1], new float[row + 1]));
                assertTrue(bad.getMessage().contains("keys.length = " + (row + 1)), bad.getMessage());
                assertThrows(IllegalArgumentException.class, () -> d.appendKv(0, new float[row], new float[2 * row]));
                assertThrows(NullPointerException.class, () -> d.appendKv(0, (float[]) null, new float[row]));
            }
        }
    }

    @Test
    void rawBitsOnAnF32SequenceAreRefusedByTheDecoder() throws Exception {
        KvShape shape = new KvShape(1, 4, 2, 64, DType.F32);
        int row = shape.kvHeads() * shape.headDim();
        try (KvEngine e = KvEngine.open(config()); KvSequence s = e.createSequence("f32", shape)) {
            s.appendTokens(new int[16]);
            s.appendKv(0, new float[16 * row], new float[16 * row]);
            try (KvDecoder d = s.decoder(DecodeOptions.defaults())) {
                IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
                        () -> d.appendKv(0, new short[row], new short[row]));
                assertTrue(ex.getMessage().contains("short[]") && ex.getMessage().contains("F32"), ex.getMessage());
            }
        }
    }

    @Test
    void openingForAnExpectedShapeRefusesAnotherModelsSequence() throws Exception {
        KvShape stored = new KvShape(1, 4, 2, 64, DType.BF16);
        KvShape other = new KvShape(1, 4, 2, 64, DType.F16);
        int row = stored.kvHeads() * stored.headDim();
        try (KvEngine e = KvEngine.open(config())) {
            try (KvSequence s = e.createSequence("m", stored)) {
                s.appendTokens(new int[16]);
                s.appendKv(0, new short[16 * row], new short[16 * row]);
                s.commit();
            }
            try (KvSequence s = e.openSequence("m", stored)) {
                assertEquals(stored, s.shape());
            }
            IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, () -> e.openSequence("m", other));
            assertTrue(ex.getMessage().contains("expectedShape = " + other) && ex.getMessage().contains(stored.toString()),
                    ex.getMessage());
            assertThrows(IllegalArgumentException.class, () -> e.openSequenceForAppend("m", other));
            assertThrows(NullPointerException.class, () -> e.openSequence("m", null));
            // The refused opens released their handles: a writer can still take the sequence.
            try (KvSequence w = e.openSequenceForAppend("m", stored)) {
                assertEquals(16, w.tokenCount(0));
            }
            assertEquals(0, e.sequences().get(0).openHandles());
        }
    }
}

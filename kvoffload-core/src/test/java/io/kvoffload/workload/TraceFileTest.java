package io.kvoffload.workload;

import static io.kvoffload.workload.SyntheticWorkloadTest.assertMessage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kvoffload.attention.ExactAttention;
import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.DType;
import io.kvoffload.KvShape;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TraceFileTest {
    private static final KvShape SHAPE = new KvShape(2, 4, 2, 16, DType.F32);
    private static final SyntheticWorkload W = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, 300).build());

    @TempDir
    Path dir;

    private Path write(DType dtype, boolean values, int queries) throws IOException {
        Path file = dir.resolve("t-" + dtype + values + queries + ".kvotrace");
        TraceHeader h = new TraceHeader(2, 4, 2, 16, 300, queries, dtype, values);
        try (TraceWriter w = new TraceWriter(file, h)) {
            for (int l = 0; l < 2; l++) {
                float[][] q = new float[queries][];
                for (int i = 0; i < queries; i++) {
                    q[i] = W.query(l, i);
                }
                w.writeLayer(W.layer(l), q);
            }
        }
        assertEquals(h.fileBytes(), Files.size(file));
        return file;
    }

    @Test
    void roundTripsKeysValuesAndQueriesInEveryDtype() throws IOException {
        for (DType dt : DType.values()) {
            Path file = write(dt, true, 3);
            try (TraceReader r = TraceReader.open(file)) {
                assertEquals(new TraceHeader(2, 4, 2, 16, 300, 3, dt, true), r.header());
                for (int l = 0; l < 2; l++) {
                    float[] expected = new float[300 * 16], actual = new float[300 * 16];
                    for (int h = 0; h < 2; h++) {
                        W.layer(l).keys(h, 0, 300, expected, 0);
                        r.layer(l).keys(h, 0, 300, actual, 0);
                        assertArrayEquals(round(dt, expected), actual, dt + " keys");
                        W.layer(l).values(h, 0, 300, expected, 0);
                        r.layer(l).values(h, 0, 300, actual, 0);
                        assertArrayEquals(round(dt, expected), actual, dt + " values");
                    }
                    assertArrayEquals(round(dt, W.query(l, 2)), r.query(l, 2), dt + " query");
                    assertEquals(3, r.queries(l).length);
                }
                // A mapped layer feeds exact attention like any other.
                float[] weights = ExactAttention.of(SHAPE).weights(r.layer(1), r.query(1, 0));
                assertEquals(300, weights.length);
            }
        }
    }

    @Test
    void keysOnlyTracesHaveNoValues() throws IOException {
        try (TraceReader r = TraceReader.open(write(DType.BF16, false, 0))) {
            assertFalse(r.layer(0).hasValues());
            assertThrows(IllegalStateException.class, () -> r.layer(0).values(0, 0, 1, new float[16], 0));
            assertMessage(() -> r.query(0, 0), "query index = 0");
        }
    }

    @Test
    void rejectsForeignTruncatedAndInconsistentFiles() throws IOException {
        Path good = write(DType.F16, true, 1);
        Path bad = dir.resolve("bad");
        Files.copy(good, bad);
        try (FileChannel ch = FileChannel.open(bad, StandardOpenOption.WRITE)) {
            ch.truncate(Files.size(good) - 2);
        }
        assertMessage(() -> open(bad), "bytes; its header implies " + Files.size(good));
        patch(good, bad, 0, ByteBuffer.wrap("NOTATRACE".getBytes(), 0, 8));
        assertMessage(() -> open(bad), "magic");
        patch(good, bad, 8, le(2));
        assertMessage(() -> open(bad), "trace version = 2", "allowed: 1");
        patch(good, bad, 36, le(7));
        assertMessage(() -> open(bad), "dtype code = 7", "0..2");
        patch(good, bad, 20, le(3)); // kvHeads 3 does not divide queryHeads 4
        assertMessage(() -> open(bad), "queryHeads = 4", "multiple of kvHeads = 3");
        patch(good, bad, 40, le(2));
        assertMessage(() -> open(bad), "flags = 2", "0..1");
        Path tiny = dir.resolve("tiny");
        Files.write(tiny, new byte[10]);
        assertMessage(() -> open(tiny), "has 10 bytes");
    }

    @Test
    void aWriterChecksShapesAndCompleteness() throws IOException {
        TraceHeader h = new TraceHeader(2, 4, 2, 16, 300, 1, DType.F32, true);
        TraceWriter w = new TraceWriter(dir.resolve("w"), h);
        assertMessage(() -> write(w, W.layer(0), new float[0][]), "queries.length = 0", "queriesPerLayer = 1");
        assertMessage(() -> write(w, W.layer(0), new float[][] {new float[5]}), "queries[0].length = 5", "= 64");
        SyntheticWorkload other = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, 301).build());
        assertMessage(() -> write(w, other.layer(0), new float[][] {W.query(0, 0)}), "tokens = 301", "tokens = 300");
        w.writeLayer(W.layer(0), new float[][] {W.query(0, 0)});
        IllegalStateException e = assertThrows(IllegalStateException.class, w::close);
        assertEquals("wrote 1 of 2 layers; the trace is incomplete", e.getMessage());
        assertMessage(() -> new TraceHeader(0, 4, 2, 16, 300, 1, DType.F32, true), "layers = 0", "1..4096");
        assertMessage(() -> new TraceHeader(1, 4, 2, 16, 300, -1, DType.F32, true), "queriesPerLayer = -1");
    }

    private static void write(TraceWriter w, LayerKv kv, float[][] q) {
        try {
            w.writeLayer(kv, q);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    private static void open(Path p) {
        try (TraceReader r = TraceReader.open(p)) {
            throw new AssertionError("opened " + r.header());
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    private static ByteBuffer le(int v) {
        return ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, v);
    }

    private static void patch(Path good, Path bad, long at, ByteBuffer bytes) throws IOException {
        Files.copy(good, bad, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        try (FileChannel ch = FileChannel.open(bad, StandardOpenOption.WRITE)) {
            ch.write(bytes, at);
        }
    }

    private static float[] round(DType dt, float[] a) {
        float[] r = new float[a.length];
        for (int i = 0; i < a.length; i++) {
            r[i] = switch (dt) {
                case F32 -> a[i];
                case F16 -> Float.float16ToFloat(Float.floatToFloat16(a[i]));
                case BF16 -> ElementCodec.fromBf16(ElementCodec.toBf16(a[i]));
            };
        }
        return r;
    }
}

package io.kvoffload.workload;

import static io.kvoffload.workload.SyntheticWorkloadTest.assertMessage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A trace as a {@link Workload}: the same keys, values, queries and engine bytes as the workload it recorded. */
class TraceWorkloadTest {
    private static final KvShape SHAPE = new KvShape(2, 4, 2, 32, DType.F32);
    private static final int TOKENS = 300;

    @TempDir
    Path dir;

    private Path record(Workload w, boolean values) throws Exception {
        Path file = dir.resolve(values ? "kv.kvotrace" : "k.kvotrace");
        try (TraceWriter tw = new TraceWriter(file, new TraceHeader(2, 4, 2, 32, TOKENS, 3, DType.F32, values))) {
            for (int l = 0; l < 2; l++) {
                tw.writeLayer(w.layer(l), new float[][] {w.query(l, 0), w.query(l, 1), w.query(l, 2)});
            }
        }
        return file;
    }

    @Test
    void aRecordedTraceReadsBackAsTheWorkload() throws Exception {
        Workload w = WorkloadFamily.MIXED_HEADS.create(SHAPE, TOKENS, 9);
        try (TraceWorkload t = TraceWorkload.open(record(w, true)); Arena arena = Arena.ofConfined()) {
            assertEquals(SHAPE, t.shape());
            assertEquals(TOKENS, t.tokens());
            assertEquals(3, t.queryCount());
            assertArrayEquals(w.query(1, 2), t.query(1, 2));
            long bytes = (long) TOKENS * SHAPE.halfEntryBytes();
            MemorySegment k1 = arena.allocate(bytes), v1 = arena.allocate(bytes);
            MemorySegment k2 = arena.allocate(bytes), v2 = arena.allocate(bytes);
            w.writeKv(1, 0, TOKENS, DType.BF16, k1, v1);
            t.writeKv(1, 0, TOKENS, DType.BF16, k2, v2);
            assertEquals(-1, k1.asSlice(0, (long) TOKENS * 2 * 32 * 2).mismatch(k2.asSlice(0, (long) TOKENS * 2 * 32 * 2)));
            assertEquals(-1, v1.asSlice(0, (long) TOKENS * 2 * 32 * 2).mismatch(v2.asSlice(0, (long) TOKENS * 2 * 32 * 2)));
        }
    }

    @Test
    void keysOnlyAndOutOfRangeWritesFailByName() throws Exception {
        Workload w = WorkloadFamily.DEFAULT.create(SHAPE, TOKENS, 9);
        try (TraceWorkload t = TraceWorkload.open(record(w, false)); Arena arena = Arena.ofConfined()) {
            MemorySegment k = arena.allocate((long) TOKENS * SHAPE.halfEntryBytes());
            MemorySegment v = arena.allocate((long) TOKENS * SHAPE.halfEntryBytes());
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> t.writeKv(0, 0, TOKENS, DType.F32, k, v));
            assertTrue(e.getMessage().contains("keys only"), e.getMessage());
            assertMessage(() -> t.writeKv(0, 200, 101, DType.F32, k, v), "tokens [200, 301)", "[0, 300)");
            assertMessage(() -> t.query(0, 3, new float[128], 0), "query index");
        }
    }
}

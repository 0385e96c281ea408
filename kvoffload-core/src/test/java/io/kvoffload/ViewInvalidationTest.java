package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import io.kvoffload.strategy.swarm.Swarm;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.testing.Allocations;
import io.kvoffload.testing.ConcurrencyScenarios;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Issue #17, defect 5: a view's segments stop being readable when the view is closed, so a kept
 * segment can never show a later step's or another sequence's KV.
 */
class ViewInvalidationTest {
    private static final Logger LOG = LoggerFactory.getLogger(ViewInvalidationTest.class);

    @TempDir
    Path root;

    @Test
    void segmentsOfAClosedViewThrowInsteadOfShowingOtherData() throws Exception {
        KvConfig cfg = ConcurrencyScenarios.prepare(root, "portable");
        KvShape shape = ConcurrencyScenarios.SHAPE;
        SyntheticWorkload other = new SyntheticWorkload(WorkloadSpec.builder(shape, 1024).seed(99).build());
        try (KvEngine e = KvEngine.open(cfg)) {
            TestEngines.storeClustered(e, "b", other, 1024, 100, 16);
            MemorySegment keys;
            MemorySegment values;
            MemorySegment positions;
            MemorySegment table;
            KvView view;
            try (KvSequence a = e.openSequence("a"); KvDecoder d = a.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).build())) {
                view = d.prefetch(0, other.query(0, 1)).await();
                keys = view.keys(0);
                values = view.values(shape.kvHeads() - 1);
                positions = view.positions();
                table = view.blockTable();
                byte first = keys.get(ValueLayout.JAVA_BYTE, 0);
                assertEquals(first, view.keys(0).get(ValueLayout.JAVA_BYTE, 0), "readable while open");
                assertTrue(view.keys(0) == keys, "one segment per step, not one per call");
                view.close();
                for (MemorySegment s : List.of(keys, values, positions, table)) {
                    assertThrows(IllegalStateException.class, () -> s.get(ValueLayout.JAVA_BYTE, 0),
                            "a segment of a closed view is not readable");
                }
                assertThrows(IllegalStateException.class, () -> view.keys(0));
                // The next step of the same decoder reuses the view's memory: the old segments stay dead.
                KvView next = d.prefetch(0, other.query(0, 2)).await();
                assertTrue(next.keys(0) != keys);
                assertThrows(IllegalStateException.class, () -> keys.get(ValueLayout.JAVA_BYTE, 0));
                next.close();
            }
            // Another sequence's decoder now takes the DRAM slots the closed one gave back.
            try (KvSequence b = e.openSequence("b"); KvDecoder d = b.decoder(DecodeOptions.builder().strategy(Swarm.defaults()).build())) {
                KvView v = d.prefetch(0, other.query(0, 1)).await();
                assertThrows(IllegalStateException.class, () -> keys.get(ValueLayout.JAVA_BYTE, 0),
                        "never another sequence's KV");
                assertThrows(IllegalStateException.class, () -> positions.get(ValueLayout.JAVA_INT, 0));
                v.close();
                // What asking for segments costs per step (prefetch/await/close alone cost nothing:
                // DecoderAllocationTest): measured, logged, and bounded.
                float[] q = other.query(0, 1);
                for (int i = 0; i < 200; i++) {
                    step(d, q, shape);
                }
                long before = Allocations.allocated();
                int steps = 200;
                for (int i = 0; i < steps; i++) {
                    step(d, q, shape);
                }
                long perStep = (Allocations.allocated() - before) / steps;
                LOG.info("a step that asks for every segment of a view ({} KV heads) allocates {} bytes", shape.kvHeads(),
                        perStep);
                assertTrue(perStep < 2048, "bytes per step with segments handed out: " + perStep);
            }
        }
    }

    private static void step(KvDecoder d, float[] q, KvShape shape) {
        KvView v = d.prefetch(0, q).await();
        v.positions().get(ValueLayout.JAVA_INT, 0);
        v.blockTable().get(ValueLayout.JAVA_INT, 0);
        for (int h = 0; h < shape.kvHeads(); h++) {
            v.keys(h).get(ValueLayout.JAVA_BYTE, 0);
            v.values(h).get(ValueLayout.JAVA_BYTE, 0);
        }
        v.close();
    }
}

package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.attention.DecodeAttention;
import io.kvoffload.attention.ExactAttention;
import io.kvoffload.attention.QualityMetrics;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The decode contract of docs/integration.md, followed as an engine would: layer {@code l+1} is
 * prefetched with a query known before layer {@code l} has run (here the previous step's query of
 * that layer); the new token's K/V, computed at layer {@code l}, is attended as an extra row — the
 * view cannot hold it yet — and appended to layer {@code l} while layer {@code l+1}'s fetch is in
 * flight, which the decoder allows (it refuses only an append to the layer being fetched); the next
 * step's view holds the token.
 */
class DecodeContractTest {
    static final KvShape SHAPE = new KvShape(3, 8, 2, 32, DType.F32);
    static final int STORED = 1024;
    static final int STEPS = 4;

    @TempDir
    Path root;

    @Test
    void pipelinedLoopAttendsTheCurrentTokenAndAppendsWhileTheNextLayerIsFetching() {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, STORED + STEPS).seed(4).build());
        int row = SHAPE.kvHeads() * SHAPE.headDim();
        DecodeOptions options = DecodeOptions.builder()
                .strategy(Swarm.builder().maintenance(Swarm.Maintenance.OFF).build()).build();
        try (KvEngine e = KvEngine.open(TestEngines.config(TestEngines.deviceDirs(root, 2), "portable")
                .blockTokens(16).build())) {
            TestEngines.storeClustered(e, "s", w, STORED, 100, 32);
            try (KvSequence s = e.openSequenceForAppend("s"); KvDecoder d = s.decoder(options)) {
                DecodeAttention kernel = new DecodeAttention(SHAPE);
                float[][] previous = new float[SHAPE.layers()][];
                float[] out = new float[SHAPE.queryHeads() * SHAPE.headDim()];
                for (int step = 0; step < STEPS; step++) {
                    int t = STORED + step;
                    s.appendTokens(t);
                    KvView pending = d.prefetch(0, w.query(0, step));
                    for (int l = 0; l < SHAPE.layers(); l++) {
                        float[] q = w.query(l, step);
                        float[] k = new float[row];
                        float[] v = new float[row];
                        kvOf(w, l, t, k, v);
                        KvView next = null;
                        if (l + 1 < SHAPE.layers()) { // layer l+1's query is not known yet: the previous step's stands in
                            float[] early = previous[l + 1] != null ? previous[l + 1] : w.query(l + 1, step);
                            next = d.prefetch(l + 1, early);
                        }
                        KvView view = pending.await();
                        int[] rows = new int[view.tokenCount() + 1];
                        boolean holdsPrevious = false;
                        for (int r = 0; r < view.tokenCount(); r++) {
                            rows[r] = view.position(r);
                            assertTrue(rows[r] < t, "the view cannot hold the token being decoded");
                            holdsPrevious |= rows[r] == t - 1;
                        }
                        assertTrue(step == 0 || holdsPrevious, "step " + step + " layer " + l + ": the view holds token "
                                + (t - 1) + ", appended last step");
                        rows[rows.length - 1] = t;
                        kernel.attend(view, q, k, v, 1, out);
                        // Exact attention over the same tokens: the view's rows plus the current token.
                        float[] exact = ExactAttention.of(SHAPE).sparseOutput(w.layer(l), q, rows);
                        double err = QualityMetrics.relativeError(exact, out);
                        assertTrue(err < 1e-5, "step " + step + " layer " + l + ": relative error " + err);
                        view.close();
                        if (next != null) {
                            assertFalse(next.isReady(), "layer " + (l + 1) + "'s fetch is still in flight");
                            int fetched = l + 1;
                            IllegalStateException refused = assertThrows(IllegalStateException.class,
                                    () -> d.appendKv(fetched, k, v), "no append to the layer being fetched");
                            assertTrue(refused.getMessage().contains("fetch in flight"), refused.getMessage());
                        }
                        d.appendKv(l, k, v); // allowed while layer l+1 is fetching
                        previous[l] = q;
                        pending = next;
                    }
                }
                s.commit();
            }
        }
    }

    /** The workload's K and V of token {@code t} in layer {@code l}, {@code [kvHead][dim]}. */
    private static void kvOf(SyntheticWorkload w, int l, int t, float[] k, float[] v) {
        for (int h = 0; h < SHAPE.kvHeads(); h++) {
            w.layer(l).keys(h, t, 1, k, h * SHAPE.headDim());
            w.layer(l).values(h, t, 1, v, h * SHAPE.headDim());
        }
    }
}

package io.kvoffload.testing;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvoffload.DecodeOptions;
import io.kvoffload.KvBatch;
import io.kvoffload.KvDecoder;
import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.workload.SyntheticWorkload;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * Batched decoding against one-by-one decoding of the same sequences: the same queries, the same
 * pipelining (two layers in flight), and every view compared byte for byte (positions, then K and
 * V of every head, in row order).
 */
public final class BatchRuns {
    private BatchRuns() {}

    /** The view's rows as bytes: positions, each head's K rows and V rows (zeros for a head a row does not hold), then each row's held heads. */
    public static byte[] contents(KvView v) {
        KvShape shape = v.shape();
        long row = (long) shape.headDim() * shape.dtype().bytes();
        int n = v.tokenCount();
        MemorySegment out = MemorySegment.ofArray(new byte[(int) (4L * n + 2L * shape.kvHeads() * n * row + 8L * n)]);
        MemorySegment.copy(v.positions(), 0, out, 0, 4L * n);
        long o = 4L * n;
        for (int h = 0; h < shape.kvHeads(); h++) {
            MemorySegment.copy(v.keys(h), 0, out, o, n * row);
            MemorySegment.copy(v.values(h), 0, out, o + n * row, n * row);
            for (int r = 0; r < n; r++) {
                if ((PerHeadViews.heldHeads(v, r) >>> h & 1) == 0) { // undefined bytes of a head the row lacks
                    out.asSlice(o + r * row, row).fill((byte) 0);
                    out.asSlice(o + n * row + r * row, row).fill((byte) 0);
                }
            }
            o += 2 * n * row;
        }
        for (int r = 0; r < n; r++) {
            out.set(ValueLayout.JAVA_LONG_UNALIGNED, o + 8L * r, PerHeadViews.heldHeads(v, r));
        }
        return out.toArray(ValueLayout.JAVA_BYTE);
    }

    /**
     * Decodes {@code steps} steps of layers 0 and 1 (both in flight) of sequences {@code ids}, whose
     * queries come from {@code w[i]}, once as a {@link KvBatch} and once decoder by decoder;
     * asserts the views are identical and bit-exact against {@code expected[i]}.
     *
     * @return the batch's views' contents, [step][layer][sequence]
     */
    public static byte[][][][] assertBatchMatchesOneByOne(KvEngine e, List<String> ids, SyntheticWorkload[] w,
            byte[][][][] expected, DecodeOptions o, int steps) {
        int n = ids.size();
        byte[][][][] batched = new byte[steps][2][n][];
        List<KvSequence> seqs = new ArrayList<>();
        List<KvDecoder> decs = new ArrayList<>();
        try {
            for (String id : ids) {
                KvSequence s = e.openSequence(id);
                seqs.add(s);
                decs.add(s.decoder(o));
            }
            KvBatch batch = KvBatch.of(decs);
            KvView[] v0 = new KvView[n];
            KvView[] v1 = new KvView[n];
            float[][] q0 = new float[n][];
            float[][] q1 = new float[n][];
            for (int step = 0; step < steps; step++) {
                for (int i = 0; i < n; i++) {
                    q0[i] = w[i].query(0, step);
                    q1[i] = w[i].query(1, step);
                }
                batch.prefetch(0, q0, v0);
                batch.prefetch(1, q1, v1); // layer 1 in flight while layer 0 is consumed
                for (int l = 0; l < 2; l++) {
                    KvView[] views = l == 0 ? v0 : v1;
                    for (int i = 0; i < n; i++) {
                        try (KvView v = views[i].await()) {
                            KvViews.assertBitExact(v, expected[i][l], true);
                            batched[step][l][i] = contents(v);
                        }
                    }
                }
            }
        } finally {
            closeAll(decs, seqs);
        }
        for (int i = 0; i < n; i++) {
            try (KvSequence s = e.openSequence(ids.get(i)); KvDecoder d = s.decoder(o)) {
                for (int step = 0; step < steps; step++) {
                    KvView a = d.prefetch(0, w[i].query(0, step));
                    KvView b = d.prefetch(1, w[i].query(1, step));
                    try (KvView v = a.await()) {
                        assertArrayEquals(batched[step][0][i], contents(v), "sequence " + i + " step " + step + " layer 0");
                    }
                    try (KvView v = b.await()) {
                        assertArrayEquals(batched[step][1][i], contents(v), "sequence " + i + " step " + step + " layer 1");
                    }
                }
                assertEquals(2L * steps, d.stats().steps());
            }
        }
        return batched;
    }

    static void closeAll(List<KvDecoder> decs, List<KvSequence> seqs) {
        for (KvDecoder d : decs) {
            d.close();
        }
        for (KvSequence s : seqs) {
            s.close();
        }
    }
}

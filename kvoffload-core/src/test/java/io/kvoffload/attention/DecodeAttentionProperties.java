package io.kvoffload.attention;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.KvView;
import io.kvoffload.SparseAttention;
import io.kvoffload.testing.TestEngines;
import java.util.Random;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * {@link DecodeAttention} against the scalar reference ({@link SparseAttention}, bit for bit: same
 * products, same summation order) and against exact dense attention ({@link ExactAttention}, within
 * {@link #bound}), over random shapes — every dtype, GQA groups 1..8, odd head dimensions —, random
 * views (any subset of the tokens in any order, with repeats dropped) and 0..3 extra rows.
 */
class DecodeAttentionProperties {
    record Case(KvShape shape, int tokens, int extra, long seed) {}

    @Provide
    Arbitrary<Case> cases() {
        Arbitrary<KvShape> shapes = Combinators.combine(
                        Arbitraries.integers().between(1, 3),
                        Arbitraries.integers().between(1, 8),
                        Arbitraries.of(1, 3, 8, 64, 128),
                        Arbitraries.of(DType.values()))
                .as((kvHeads, group, headDim, dtype) -> new KvShape(1, kvHeads * group, kvHeads, headDim, dtype));
        return Combinators.combine(shapes, Arbitraries.integers().between(4, 300), Arbitraries.integers().between(0, 3),
                        Arbitraries.longs())
                .as(Case::new);
    }

    @Property(tries = 40)
    void matchesTheReferenceBitForBitAndDenseAttentionWithinTheBound(@ForAll("cases") Case c) {
        try (AttentionFixture f = new AttentionFixture(c.shape(), c.tokens(), c.seed())) {
            Random rnd = new Random(c.seed() ^ 7);
            // The view: a random subset, in random order, of the tokens before the extra rows.
            int stored = c.tokens() - c.extra();
            int[] perm = TestEngines.shuffled(rnd, stored);
            int count = 1 + rnd.nextInt(stored);
            float[] xk = f.rows(f.keys, stored, c.extra());
            float[] xv = f.rows(f.values, stored, c.extra());
            int q = c.shape().queryHeads() * c.shape().headDim();
            float[] fast = new float[q];
            float[] reference = new float[q];
            DecodeAttention kernel = new DecodeAttention(c.shape());
            try (KvView v = f.view(perm, count)) {
                kernel.attend(v, f.query, xk, xv, c.extra(), fast);
                new SparseAttention(c.shape()).attend(v, f.query, xk, xv, c.extra(), reference);
                assertArrayEquals(reference, fast, "bit for bit with the reference");
                // The dense reference over the same tokens: the view's rows, then the extra rows.
                int[] order = new int[count + c.extra()];
                for (int i = 0; i < count; i++) {
                    order[i] = v.position(i);
                }
                for (int i = 0; i < c.extra(); i++) {
                    order[count + i] = stored + i;
                }
                float[] dense = ExactAttention.of(c.shape()).compute(f.dense(order), f.query).output();
                double bound = bound(c.shape(), f, order);
                for (int i = 0; i < q; i++) {
                    assertTrue(Math.abs(fast[i] - dense[i]) <= bound,
                            "element " + i + ": kernel " + fast[i] + ", dense " + dense[i] + ", bound " + bound);
                }
            }
        }
    }

    /**
     * How far two correct float evaluations of the same attention may differ when only their
     * summation order differs (u = 2⁻²⁴, the unit roundoff): a score is a sum of {@code d}
     * products, so two orders differ by at most {@code γ_d · Σ|q_j k_j| · scale} with
     * {@code γ_d ≈ d·u}; a score error δ changes a softmax weight by a relative {@code ≤ 2δ} (its
     * own exp and the normaliser) to first order; the output, a convex combination of {@code n}
     * values, differs by at most {@code γ_n · max|v|} from summation order, and by
     * {@code 2δ · max|v|} from the weights; a few more roundings (exp, scale, norm) add
     * {@code 4u}. The bound is twice that, for the second-order terms left out. Equal inputs in the
     * same order give 0 (see the bit-for-bit assertion).
     */
    static double bound(KvShape shape, AttentionFixture f, int[] order) {
        double u = Math.ulp(1.0f) / 2;
        int d = shape.headDim();
        int kvh = shape.kvHeads();
        double scale = 1 / Math.sqrt(d);
        double maxDot = 0;
        double maxV = 0;
        for (int h = 0; h < shape.queryHeads(); h++) {
            int kh = h / shape.groupSize();
            for (int t : order) {
                double s = 0;
                for (int j = 0; j < d; j++) {
                    s += Math.abs(f.query[h * d + j] * f.keys[(t * kvh + kh) * d + j]);
                    maxV = Math.max(maxV, Math.abs(f.values[(t * kvh + kh) * d + j]));
                }
                maxDot = Math.max(maxDot, s);
            }
        }
        double delta = d * u * maxDot * scale;
        return 2 * (order.length * u + 2 * delta + 4 * u) * maxV;
    }
}

package io.kvoffload.workload;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.attention.ExactAttention;
import io.kvoffload.internal.util.TopK;
import io.kvoffload.internal.util.ElementCodec;
import io.kvoffload.strategy.DenseLayerKv;
import io.kvoffload.strategy.LayerKv;
import io.kvoffload.DType;
import io.kvoffload.KvShape;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The attention structure the generator promises, measured with exact attention. */
class SyntheticWorkloadTest {
    private static final KvShape SHAPE = new KvShape(2, 8, 2, 128, DType.BF16);
    private static final int TOKENS = 16384;
    private static final int STEPS = 40;

    private static SyntheticWorkload workload;
    private static float[][] weights; // exact weights of layer 0, steps 0..STEPS-1

    @BeforeAll
    static void attend() {
        workload = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).build());
        DenseLayerKv kv = DenseLayerKv.materialize(workload.layer(0), false);
        ExactAttention attention = ExactAttention.of(SHAPE);
        weights = new float[STEPS][];
        for (int s = 0; s < STEPS; s++) {
            weights[s] = attention.weights(kv, workload.query(0, s));
        }
    }

    @Test
    void sinksDrawALargeShareOfEveryQuerysAttention() {
        double uniform = 1.0 / TOKENS;
        double mass = 0;
        for (float[] w : weights) {
            double step = 0;
            for (int t = 0; t < 4; t++) {
                step += w[t];
                assertTrue(w[t] > 20 * uniform, "sink " + t + " weight " + w[t]);
            }
            mass += step;
        }
        mass /= STEPS;
        // 4 of 16384 tokens, i.e. 400× their uniform share
        assertTrue(mass > 0.1, "mean mass of the 4 sinks " + mass);
    }

    @Test
    void recentTokensAreAttendedMoreThanDistantOnes() {
        double ratio = meanWeightRatio(TOKENS, (s, t) -> {
            if (inActiveGroup(0, s, t) || workload.isHeavyHitter(0, t)) {
                return 0; // compare ordinary tokens only
            }
            int distance = TOKENS + s - t;
            return distance <= 32 ? 1 : distance > 4096 ? 2 : 0;
        });
        assertTrue(ratio > 5, "recent/distant mean weight ratio " + ratio);
    }

    @Test
    void heavyHittersAreAttendedWhateverTheQueryIsAbout() {
        double ratio = meanWeightRatio(TOKENS - 1024,
                (s, t) -> inActiveGroup(0, s, t) ? 0 : workload.isHeavyHitter(0, t) ? 1 : 2);
        assertTrue(ratio > 20, "heavy hitter / ordinary mean weight ratio " + ratio);
    }

    /** Which of two classes token {@code t} of step {@code s} is in: 1 or 2, or 0 to leave it out. */
    private interface TokenClass {
        int of(int s, int t);
    }

    /**
     * The mean exact weight of class-1 tokens over that of class-2 tokens, over tokens
     * {@code [4, end)} (past the sinks) of every step; NaN when a class is empty.
     */
    private static double meanWeightRatio(int end, TokenClass cls) {
        double[] sum = new double[3];
        int[] n = new int[3];
        for (int s = 0; s < STEPS; s++) {
            for (int t = 4; t < end; t++) {
                int c = cls.of(s, t);
                sum[c] += weights[s][t];
                n[c]++;
            }
        }
        return (sum[1] / n[1]) / (sum[2] / n[2]);
    }

    @Test
    void membersOfTheAttendedGroupsCarryMostOfTheRemainingMass() {
        double group = 0, rest = 0;
        for (int s = 0; s < STEPS; s++) {
            for (int t = 4; t < TOKENS; t++) {
                if (inActiveGroup(0, s, t)) {
                    group += weights[s][t];
                } else {
                    rest += weights[s][t];
                }
            }
        }
        assertTrue(group > rest, "group mass " + group / STEPS + " vs other non-sink mass " + rest / STEPS);
    }

    @Test
    void bridgeTokensAreActivatedWithEitherOfTheirGroups() {
        int viaSecondary = 0, secondaryCases = 0, viaPrimary = 0, primaryCases = 0;
        for (int s = 0; s < STEPS; s++) {
            Set<Integer> active = activeSet(0, s);
            Set<Integer> topSet = new HashSet<>();
            for (int t : TopK.indices(weights[s], TOKENS / 20)) { // the top 5%
                topSet.add(t);
            }
            for (int t = 4; t < TOKENS; t++) {
                boolean first = active.contains(workload.primaryGroup(0, t));
                int g2 = workload.secondaryGroup(0, t);
                if (first && g2 < 0) {
                    primaryCases++;
                    viaPrimary += topSet.contains(t) ? 1 : 0;
                } else if (!first && g2 >= 0 && active.contains(g2)) {
                    secondaryCases++;
                    viaSecondary += topSet.contains(t) ? 1 : 0;
                }
            }
        }
        assertTrue(secondaryCases > 0, "no bridge token had only its second group attended");
        double primaryRate = viaPrimary / (double) primaryCases, secondaryRate = viaSecondary / (double) secondaryCases;
        assertTrue(primaryRate > 0.8, "members of an attended group in the top 5%: " + primaryRate);
        assertTrue(secondaryRate > 0.8, "bridges attended through their second group in the top 5%: " + secondaryRate);
    }

    /**
     * KVSwap Fig. 8: 75–80% of the predicted groups (4 consecutive tokens, top 100 by max weight, sinks
     * and the 256 newest tokens kept aside as KVSwap's rolling buffer does) recur at the next step.
     */
    @Test
    void adjacentDecodingStepsSelectLargelyTheSameGroups() {
        int g = 4, m = 100, groups = (TOKENS - 256) / g;
        double overlap = 0;
        Set<Integer> previous = null;
        for (int s = 0; s < STEPS; s++) {
            float[] score = new float[groups];
            for (int i = 1; i < groups; i++) { // group 0 holds the sinks
                for (int t = i * g; t < i * g + g; t++) {
                    score[i] = Math.max(score[i], weights[s][t]);
                }
            }
            Set<Integer> now = new HashSet<>();
            for (int i : TopK.indices(score, m)) {
                now.add(i);
            }
            if (previous != null) {
                Set<Integer> both = new HashSet<>(now);
                both.retainAll(previous);
                overlap += both.size() / (double) m;
            }
            previous = now;
        }
        overlap /= STEPS - 1;
        assertTrue(overlap >= 0.7 && overlap <= 0.85, "mean adjacent-step overlap " + overlap);
    }

    @Test
    void queryHeadsSharingAKvHeadAreCorrelated() {
        int d = SHAPE.headDim(), sem = 2 * workload.spec().positionalPairs() + 1, group = SHAPE.groupSize();
        double same = 0, other = 0;
        int nSame = 0, nOther = 0;
        for (int s = 0; s < STEPS; s++) {
            float[] q = workload.query(0, s);
            for (int a = 0; a < SHAPE.queryHeads(); a++) {
                for (int b = a + 1; b < SHAPE.queryHeads(); b++) {
                    double c = cosine(q, a * d + sem, b * d + sem, d - sem);
                    if (a / group == b / group) {
                        same += c;
                        nSame++;
                    } else {
                        other += Math.abs(c);
                        nOther++;
                    }
                }
            }
        }
        assertEquals(0.8, same / nSame, 0.1, "same KV head");
        assertTrue(other / nOther < 0.3, "different KV heads " + other / nOther);
    }

    @Test
    void attendedGroupsRecurAtTheConfiguredRateAndDriftSlowly() {
        int steps = 3000;
        int kept = 0, slots = 0;
        int[] early = new int[workload.groups()], late = new int[workload.groups()];
        for (int s = 0; s < steps; s++) {
            int[] now = workload.activeGroups(0, s);
            if (s > 0) {
                Set<Integer> before = activeSet(0, s - 1);
                for (int g : now) {
                    kept += before.contains(g) ? 1 : 0;
                }
                slots += now.length;
            }
            for (int g : now) {
                if (s < 1000) {
                    early[g]++;
                } else if (s >= 2000) {
                    late[g]++;
                }
            }
        }
        assertEquals(0.9, kept / (double) slots, 0.02, "retention");
        // Drift: the ten most attended groups of the first 1000 steps are mostly not the ten of the last 1000.
        Set<Integer> hotEarly = top(early, 10), hotLate = top(late, 10);
        hotEarly.retainAll(hotLate);
        assertTrue(hotEarly.size() <= 5, "hot groups shared between early and late: " + hotEarly.size());
    }

    @Test
    void sameSeedSameWorkloadOtherSeedOtherWorkload() {
        SyntheticWorkload again = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).build());
        SyntheticWorkload other = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(42).build());
        SeedDeterminism.assertSeedDecides(workload, again, other, 1, 1000, 7, 17);
        assertArrayEquals(workload.activeGroups(1, 99), again.activeGroups(1, 99));
    }

    @Test
    void aChunkEqualsTheSameTokensReadOneByOneAndLayersDiffer() {
        LayerKv layer = workload.layer(0);
        int d = SHAPE.headDim();
        float[] chunk = new float[10 * d];
        layer.keys(1, 500, 10, chunk, 0);
        float[] one = new float[d];
        for (int i = 0; i < 10; i++) {
            layer.keys(1, 500 + i, 1, one, 0);
            assertArrayEquals(one, Arrays.copyOfRange(chunk, i * d, (i + 1) * d));
        }
        float[] other = new float[10 * d];
        workload.layer(1).keys(1, 500, 10, other, 0);
        assertFalse(Arrays.equals(chunk, other));
        assertNotEquals(workload.primaryGroup(0, 500), -1);
    }

    @Test
    void writesTheEngineLayoutInEveryDtype() {
        int d = SHAPE.headDim(), kvh = SHAPE.kvHeads(), count = 3, from = 100;
        float[] k = new float[d], v = new float[d];
        try (Arena arena = Arena.ofConfined()) {
            for (DType dt : DType.values()) {
                long bytes = (long) count * kvh * d * dt.bytes();
                MemorySegment ks = arena.allocate(bytes), vs = arena.allocate(bytes);
                workload.writeKv(1, from, count, dt, ks, vs);
                for (int i = 0; i < count; i++) {
                    for (int h = 0; h < kvh; h++) {
                        workload.layer(1).keys(h, from + i, 1, k, 0);
                        workload.layer(1).values(h, from + i, 1, v, 0);
                        for (int j = 0; j < d; j++) {
                            long at = ((long) (i * kvh + h) * d + j) * dt.bytes();
                            assertEquals(round(dt, k[j]), ElementCodec.read(dt, ks, at), dt + " key");
                            assertEquals(round(dt, v[j]), ElementCodec.read(dt, vs, at), dt + " value");
                        }
                    }
                }
            }
            MemorySegment small = arena.allocate(8);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> workload.writeKv(0, 0, 1, DType.F32, small, small));
            assertTrue(e.getMessage().contains("keys.byteSize() = 8"), e.getMessage());
        }
    }

    @Test
    void aMillionTokenLayerIsLazy() {
        SyntheticWorkload big = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, 1 << 20).build());
        LayerKv layer = big.layer(0);
        float[] k = new float[SHAPE.headDim()];
        layer.keys(0, (1 << 20) - 1, 1, k, 0); // nothing per token is stored: this costs one key
        assertTrue(Math.abs(k[0]) > 0);
        assertEquals(1 << 20, layer.tokens());
    }

    @Test
    void rejectsOutOfRangeKnobsNamingTheArgumentAndTheRange() {
        WorkloadSpec.Builder b = WorkloadSpec.builder(SHAPE, 1000);
        assertMessage(() -> b.sinkLogit(-1), "sinkLogit = -1.0", "0.0..50.0");
        assertMessage(() -> b.groupRetention(1.5), "groupRetention = 1.5", "0.0..1.0");
        assertMessage(() -> b.gqaCorrelation(Double.NaN), "gqaCorrelation = NaN", "0.0..1.0");
        assertMessage(() -> b.sinkTokens(1001), "sinkTokens = 1001", "0..1000");
        assertMessage(() -> b.spanLength(0), "spanLength = 0", "1..65536");
        assertMessage(() -> b.positionalPairs(40), "positionalPairs = 40", "1..8");
        assertMessage(() -> WorkloadSpec.builder(SHAPE, 0), "tokens = 0", "1..");
        assertMessage(() -> WorkloadSpec.builder(new KvShape(1, 1, 1, 4, DType.F32), 10), "shape.headDim = 4", "8..16384");
        assertMessage(() -> workload.query(2, 0), "layer = 2", "0..1");
        assertMessage(() -> workload.query(0, -1), "step = -1", "0..");
        assertMessage(() -> workload.primaryGroup(0, TOKENS), "token = " + TOKENS, "0.." + (TOKENS - 1));
        assertMessage(() -> workload.layer(0).keys(2, 0, 1, new float[128], 0), "kvHead = 2", "0..1");
        assertMessage(() -> workload.layer(0).keys(0, TOKENS - 1, 2, new float[256], 0), "tokens [16383, 16385)", "16384");
        assertMessage(() -> workload.layer(0).keys(0, 0, 2, new float[100], 0), "dst", "0..100");
    }

    static void assertMessage(Runnable r, String... parts) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, r::run);
        for (String p : parts) {
            assertTrue(e.getMessage().contains(p), "message \"" + e.getMessage() + "\" lacks \"" + p + "\"");
        }
    }

    private static float round(DType dt, float f) {
        return switch (dt) {
            case F32 -> f;
            case F16 -> Float.float16ToFloat(Float.floatToFloat16(f));
            case BF16 -> ElementCodec.fromBf16(ElementCodec.toBf16(f));
        };
    }

    private static boolean inActiveGroup(int layer, int step, int t) {
        Set<Integer> a = activeSet(layer, step);
        return a.contains(workload.primaryGroup(layer, t)) || a.contains(workload.secondaryGroup(layer, t));
    }

    private static Set<Integer> activeSet(int layer, int step) {
        Set<Integer> s = new HashSet<>();
        for (int g : workload.activeGroups(layer, step)) {
            s.add(g);
        }
        return s;
    }

    private static Set<Integer> top(int[] counts, int k) {
        float[] f = new float[counts.length];
        for (int i = 0; i < f.length; i++) {
            f[i] = counts[i];
        }
        Set<Integer> s = new HashSet<>();
        for (int i : TopK.indices(f, k)) {
            s.add(i);
        }
        return s;
    }

    private static double cosine(float[] q, int a, int b, int n) {
        double dot = 0, na = 0, nb = 0;
        for (int i = 0; i < n; i++) {
            dot += (double) q[a + i] * q[b + i];
            na += (double) q[a + i] * q[a + i];
            nb += (double) q[b + i] * q[b + i];
        }
        return dot / Math.sqrt(na * nb);
    }
}

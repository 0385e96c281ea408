package io.kvoffload.internal.kvswap;

import static io.kvoffload.internal.kvswap.KvSwapFixtures.assertMessage;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ParameterTunerTest {
    /** 8 layers, GQA 2, 2 KV heads of 32: a 256-byte entry in BF16. */
    static final KvShape SHAPE = new KvShape(8, 4, 2, 32, DType.BF16);
    static final SyntheticWorkload WORKLOAD = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, 4096).seed(9).build());
    static final CalibrationSet CALIBRATION = CalibrationSet.of(WORKLOAD.layer(0), WORKLOAD.queries(0, 12),
            SHAPE.queryHeads());

    static ParameterTuner.Builder tuner(long budget) {
        return ParameterTuner.builder(SHAPE, 16384, 4, budget).budgetTokens(128).computeSecondsPerLayer(2e-5)
                .maxReuseLevels(4);
    }

    @Test
    void choosesTheSmallestGroupThatHidesTheIoWithinBudget() {
        // 40 MiB: the compressed caches take 1 MiB per unit of rank (8 layers × 4 sequences × 16K
        // tokens × 2 bytes), so r = 32 (σ = 2) is the largest rank that fits next to the buffers.
        long budget = 40L << 20;
        List<String> progress = new ArrayList<>();
        KvSwapConfig c = tuner(budget).computeSecondsPerLayer(2.5e-4).build().tune(CALIBRATION, (done, total, what) -> {
            assertTrue(done <= total, done + " of " + total);
            progress.add(what);
        });
        assertEquals("done", progress.get(progress.size() - 1));
        assertTrue(c.memory().totalBytes() <= budget);
        assertEquals(32, c.rank());
        assertEquals(32L << 20, c.memory().compressedKBytes());
        assertEquals(GroupPredictor.groupsFor(128, c.groupSize()), c.groups());
        assertTrue(c.reuseSlots() >= c.groups());
        assertTrue(c.predicted().ioHidden());
        assertTrue(c.groupSize() > 1, "G = 1 reads 4 KiB per 256-byte entry: IOPS-bound, never hidden here");
        // Greedy: the search stops at the first candidate that hides its I/O, which is the choice.
        List<KvSwapConfig.Candidate> tried = c.search();
        for (int i = 0; i < tried.size() - 1; i++) {
            assertFalse(tried.get(i).predicted().ioHidden(), "candidate " + i + " hid its I/O first");
            assertTrue(tried.get(i).groupSize() < c.groupSize(), "smaller groups are tried first");
        }
        KvSwapConfig.Candidate last = tried.get(tried.size() - 1);
        assertEquals(last.groupSize(), c.groupSize());
        assertEquals(last.rank(), c.rank());
        assertEquals(last.reuseSlots(), c.reuseSlots());
        assertEquals(last.predicted(), c.predicted());
        assertTrue(c.predicted().attentionMassRecall() > 0.8, "recall " + c.predicted().attentionMassRecall());
        assertTrue(c.predicted().reuseRate() > 0.5, "reuse " + c.predicted().reuseRate());
    }

    @Test
    void withoutAHidingCandidateTakesTheBestQualifyingOne() {
        // Compute too short to hide anything; a recall floor no candidate reaches: the best recall wins.
        KvSwapConfig c = tuner(40L << 20).computeSecondsPerLayer(1e-6).minRecall(0.999).build()
                .tune(CALIBRATION, ParameterTuner.Progress.NONE);
        assertFalse(c.predicted().ioHidden());
        double best = c.search().stream().mapToDouble(t -> t.predicted().attentionMassRecall()).max().orElseThrow();
        assertEquals(best, c.predicted().attentionMassRecall());
        // No floor: the highest modelled throughput wins.
        KvSwapConfig fast = tuner(40L << 20).computeSecondsPerLayer(1e-6).build().tune(CALIBRATION,
                ParameterTuner.Progress.NONE);
        double tps = fast.search().stream().mapToDouble(t -> t.predicted().tokensPerSecond()).max().orElseThrow();
        assertEquals(tps, fast.predicted().tokensPerSecond());
    }

    @Test
    void jsonRoundTripAndValidation(@TempDir Path dir) throws Exception {
        KvSwapConfig c = tuner(6L << 20).build().tune(CALIBRATION, ParameterTuner.Progress.NONE);
        Path file = dir.resolve("kvswap.json");
        c.write(file);
        KvSwapConfig back = KvSwapConfig.read(file);
        assertEquals(c, back);
        String json = Files.readString(file);
        assertTrue(json.contains("\"groupSize\""));
        assertMessage(() -> KvSwapConfig.fromJson(json.replace("\"rollingGroups\"", "\"rollingGroupz\"")),
                "unknown key 'rollingGroupz'");
        assertMessage(() -> KvSwapConfig.fromJson(json.replace("\"dramBudgetBytes\" : " + c.dramBudgetBytes(),
                "\"dramBudgetBytes\" : 1000")), "memory.totalBytes() = ", "exceeds dramBudgetBytes = 1000");
        assertMessage(() -> KvSwapConfig.fromJson(json.replace("\"rank\" : " + c.rank(), "\"rank\" : 1")),
                "memory = ", "does not match the settings");
        assertMessage(() -> KvSwapConfig.fromJson(json.replace("\"reusePolicy\" : \"FIFO\"", "\"reusePolicy\" : \"LRU\"")),
                "reusePolicy = 'LRU'", "allowed: [FIFO, REPLACE_UNREQUESTED]");
        assertMessage(() -> KvSwapConfig.fromJson(json.replace("\"groups\" : " + c.groups(), "\"groups\" : 3")),
                "groups = 3", "⌈budgetTokens / groupSize⌉");
        assertMessage(() -> KvSwapConfig.fromJson("{\"format\": \"x\"}"), "format = 'x'");
        assertMessage(() -> KvSwapConfig.fromJson("[1, 2"), "not valid JSON");
        assertMessage(() -> KvSwapConfig.fromJson(json.replace("\"batchSize\" : 4", "\"batchSize\" : \"4\"")),
                "batchSize = 4 must be an integer");
    }

    @Test
    void aTooSmallBudgetSaysWhatWouldFit() {
        assertMessage(() -> tuner(100_000).build().tune(CALIBRATION, ParameterTuner.Progress.NONE),
                "dramBudgetBytes = 100000 is too small", "allowed: at least");
        KvShape other = new KvShape(8, 4, 1, 32, DType.BF16);
        assertMessage(() -> ParameterTuner.builder(other, 16384, 4, 1L << 30).build().tune(CALIBRATION,
                ParameterTuner.Progress.NONE), "calibration has queryHeads = 4, kvHeads = 2");
        assertMessage(() -> tuner(1).relaxation(2), "relaxation = 2.0", "allowed: 0.0..1.0");
        assertMessage(() -> tuner(1).groupSizes(4, 0), "groupSize = 0", "allowed: 1..4096");
        assertMessage(() -> ParameterTuner.builder(SHAPE, 16384, 0, 1), "batchSize = 0", "allowed: 1..65536");
        assertArrayEquals(new int[] {64, 32, 16, 8, 4, 2}, tuner(1).build().rankCandidates(), "σ = 1..32 of 64");
    }
}

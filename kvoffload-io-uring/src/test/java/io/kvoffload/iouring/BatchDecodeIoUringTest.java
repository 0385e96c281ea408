package io.kvoffload.iouring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.DType;
import io.kvoffload.DecodeOptions;
import io.kvoffload.KvConfig;
import io.kvoffload.KvEngine;
import io.kvoffload.KvShape;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.testing.BatchRuns;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Batched decoding on io_uring: one submission for several sequences' reads, with rings far
 * smaller than the batch (reads wait in the backlog and land out of order across sequences); the
 * views equal the sequences decoded one by one.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@ExtendWith(IoUringRequired.class)
class BatchDecodeIoUringTest {
    static final KvShape SHAPE = new KvShape(2, 8, 2, 64, DType.BF16);
    static final int TOKENS = 2048;
    static final List<String> IDS = List.of("a", "b", "c");

    @TempDir
    Path dir;

    @Test
    void aBatchThroughATinyRingEqualsOneByOne() throws Exception {
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(dir, 2), "io_uring").queueDepth(2).build();
        try (KvEngine e = KvEngine.open(cfg)) {
            assertEquals("io_uring", e.stats().ioBackend());
            SyntheticWorkload[] w = new SyntheticWorkload[IDS.size()];
            byte[][][][] expected = new byte[IDS.size()][][][];
            for (int i = 0; i < IDS.size(); i++) {
                w[i] = new SyntheticWorkload(WorkloadSpec.builder(SHAPE, TOKENS).seed(40 + i).build());
                expected[i] = TestEngines.storeClustered(e, IDS.get(i), w[i], TOKENS, 100, 16);
            }
            DecodeOptions o = DecodeOptions.builder().strategy(Swarm.defaults()).cacheBytes(0).sinkTokens(0)
                    .localWindow(0).sparsity(0.3).build();
            byte[][][][] views = BatchRuns.assertBatchMatchesOneByOne(e, IDS, w, expected, o, 3);
            assertTrue(views[0][0][0].length > 0.3 * TOKENS * SHAPE.entryBytes(), "the budget was read");
        }
    }
}

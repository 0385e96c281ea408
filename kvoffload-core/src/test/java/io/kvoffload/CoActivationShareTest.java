package io.kvoffload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvoffload.internal.swarm.CoActivationCoverage;
import io.kvoffload.strategy.swarm.ClusterOptions;
import io.kvoffload.strategy.swarm.ClusterSummary;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.testing.TestEngines;
import io.kvoffload.workload.SyntheticWorkload;
import io.kvoffload.workload.WorkloadSpec;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.event.EventRecordingLogger;
import org.slf4j.event.Level;
import org.slf4j.event.SubstituteLoggingEvent;
import org.slf4j.helpers.SubstituteLogger;

/**
 * {@link ClusterSummary#coActivationShare()}: the share of a layer's tokens co-activation actually
 * clustered, and the WARN when it is near zero (issue #16: an index of positional blocks otherwise
 * goes unnoticed).
 */
class CoActivationShareTest {
    static final int TOKENS = SwarmOfflinePhaseTest.TOKENS;

    @TempDir
    Path root;

    @Test
    void summaryReportsTheShareOfCoActivatedTokens() throws Exception {
        SyntheticWorkload w = new SyntheticWorkload(WorkloadSpec.builder(SwarmOfflinePhaseTest.SHAPE, TOKENS).seed(5).build());
        KvConfig cfg = TestEngines.config(TestEngines.deviceDirs(root, 2), "portable").blockTokens(16).build();
        List<int[]> grouped = SwarmOfflinePhaseTest.activationSets(w, 1, 32, TOKENS, false);
        List<int[]> scattered = new ArrayList<>();
        for (int step = 0; step < 32; step++) {
            scattered.add(new int[] {(step * 97) % TOKENS}); // one token per query: nothing is co-activated
        }
        try (KvEngine e = KvEngine.open(cfg); KvSequence s = e.createSequence("share", SwarmOfflinePhaseTest.SHAPE)) {
            SwarmOfflinePhaseTest.store(s, w);
            s.commit();
            ClusterSummary low = Swarm.clusterLayer(s, 0, scattered, ClusterOptions.defaults());
            ClusterSummary high = Swarm.clusterLayer(s, 1, grouped, ClusterOptions.defaults().withRadius(0.5));
            assertTrue(low.coActivationShare() < ClusterSummary.LOW_CO_ACTIVATION_SHARE && low.lowCoActivation(), low.toString());
            assertTrue(high.coActivationShare() > 0.02 && !high.lowCoActivation(), high.toString());
            // The share counts distinct tokens in the leading (Algorithm 1) clusters.
            BitSet in = new BitSet();
            for (int c = 0; c < high.coActivationClusters(); c++) {
                for (int t : Swarm.clusterMembers(s, 1, c)) {
                    in.set(t);
                }
            }
            assertEquals(in.cardinality() / (double) TOKENS, high.coActivationShare(), 1e-12);
        }
    }

    @Test
    void aNearZeroShareLogsOneWarningAndAHealthyOneNone() {
        ConcurrentLinkedQueue<SubstituteLoggingEvent> events = new ConcurrentLinkedQueue<>();
        EventRecordingLogger log = new EventRecordingLogger(new SubstituteLogger("swarm", events, false), events);
        ClusterSummary low = new ClusterSummary(3, 16384, 1024, 2, 0.003, 16, 1.0, 0.35, 1, 1, 1, 1);
        ClusterSummary fine = new ClusterSummary(3, 16384, 1024, 200, 0.4, 16, 1.3, 0.35, 1, 1, 1, 1);
        assertTrue(CoActivationCoverage.warnIfLow(log, low));
        assertFalse(CoActivationCoverage.warnIfLow(log, fine));
        assertEquals(1, events.size());
        SubstituteLoggingEvent event = events.peek();
        assertEquals(Level.WARN, event.getLevel());
        String text = org.slf4j.helpers.MessageFormatter.arrayFormat(event.getMessage(), event.getArgumentArray()).getMessage();
        assertTrue(text.contains("layer 3") && text.contains("0.30%") && text.contains("co-activation"), text);
    }
}

package io.kvoffload.bench;

import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.strategy.swarm.ClusterOptions;
import io.kvoffload.strategy.swarm.Swarm;
import io.kvoffload.workload.SyntheticWorkload;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/** Sequences the decode benchmarks read: a workload's tokens, every layer clustered by Swarm, committed. */
public final class ClusteredSequences {
    private ClusteredSequences() {}

    /**
     * Creates sequence {@code id} with {@code tokens} tokens of {@code w} in every layer, clusters
     * each layer from 16 profiling queries (steps 10,000 on, apart from the decode steps) and commits it.
     */
    public static void store(KvEngine engine, String id, SyntheticWorkload w, int tokens) {
        store(engine, id, w, tokens, 16, 10_000);
    }

    /**
     * As {@link #store(KvEngine, String, SyntheticWorkload, int)}, clustering each layer from
     * {@code profileQueries} queries from step {@code firstProfileStep} on.
     */
    public static void store(KvEngine engine, String id, SyntheticWorkload w, int tokens, int profileQueries,
            int firstProfileStep) {
        KvShape shape = w.spec().shape();
        try (KvSequence s = engine.createSequence(id, shape); Arena a = Arena.ofConfined()) {
            s.appendTokens(new int[tokens]);
            MemorySegment k = a.allocate((long) tokens * shape.halfEntryBytes());
            MemorySegment v = a.allocate((long) tokens * shape.halfEntryBytes());
            for (int l = 0; l < shape.layers(); l++) {
                w.writeKv(l, 0, tokens, shape.dtype(), k, v);
                s.appendKv(l, k, v);
                List<float[]> profile = new ArrayList<>();
                for (int q = 0; q < profileQueries; q++) {
                    profile.add(w.query(l, firstProfileStep + q));
                }
                Swarm.clusterLayerFromQueries(s, l, profile, ClusterOptions.defaults());
            }
            s.commit();
        }
    }
}

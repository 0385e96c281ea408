package io.kvoffload.workload;

import io.kvoffload.KvShape;
import io.kvoffload.internal.util.Checks;
import java.util.Arrays;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * The named synthetic workloads: the original co-activation-group generator and the model-like
 * families with RoPE, outlier channels, head types and topic runs (and the no-structure control).
 * A selection method is measured on all of them, so one tuned to a single generator's knobs shows
 * it. docs/swarm-offline.md §1b describes each.
 */
public enum WorkloadFamily {
    /** {@link SyntheticWorkload} with {@link WorkloadSpec}'s defaults: what every benchmark used before the families. */
    DEFAULT("default", "co-activation groups of 8-token spans, sinks, window, heavy hitters (SyntheticWorkload, unchanged)",
            null),
    /** Model-like, the spec's defaults: 40% streaming, 15% retrieval, 45% mixed heads. */
    MIXED_HEADS("mixed-heads", "RoPE θ=500k, outlier key channels, 40% streaming / 15% retrieval / 45% mixed heads,"
            + " topic runs of 8-256 tokens, 4 drifting query topics", b -> b),
    /** Most heads streaming, as DuoAttention finds a model can afford. */
    STREAMING_HEADS("streaming-heads", "as mixed-heads with 75% streaming / 5% retrieval / 20% mixed heads",
            b -> b.streamingShare(0.75).retrievalShare(0.05)),
    /** A retrieval-heavy stress case: half the heads sharp on one topic. */
    RETRIEVAL_HEADS("retrieval-heads", "as mixed-heads with 20% streaming / 50% retrieval / 30% mixed heads, sharper"
            + " salience (stress case)", b -> b.streamingShare(0.2).retrievalShare(0.5).salienceSpread(0.4)),
    /** Long runs, as in concatenated documents: topics in runs of 256–4,096 tokens, few per query. */
    LONG_DOCUMENTS("long-documents", "as mixed-heads with topic runs of 256-4096 tokens (concatenated documents),"
            + " 2 query topics", b -> b.minRun(256).maxRun(4096).topics(0).queryTopics(2)),
    /** The control: no topics, no local band, no heavy hitters, independent queries (sinks, RoPE, outliers stay). */
    CONTROL("control", "NO structure: i.i.d. content under RoPE with outlier channels and sinks, independent queries",
            b -> b.structured(false).noiseLogit(2.0));

    private final String familyName;
    private final String description;
    private final UnaryOperator<ModelLikeSpec.Builder> tweak;

    WorkloadFamily(String familyName, String description, UnaryOperator<ModelLikeSpec.Builder> tweak) {
        this.familyName = familyName;
        this.description = description;
        this.tweak = tweak;
    }

    /** The name on command lines and in reports. */
    public String familyName() {
        return familyName;
    }

    /** One line: what the family carries. */
    public String description() {
        return description;
    }

    /**
     * The family's workload.
     *
     * @param shape model shape (head dimension even, at least 16 for the model-like families)
     * @param tokens context length per layer
     * @param seed seed of every random choice
     */
    public Workload create(KvShape shape, int tokens, long seed) {
        Checks.notNull("shape", shape);
        if (tweak == null) {
            return new SyntheticWorkload(WorkloadSpec.builder(shape, tokens).seed(seed).build());
        }
        return new ModelLikeWorkload(spec(shape, tokens, seed));
    }

    /** The model-like spec of this family. */
    public ModelLikeSpec spec(KvShape shape, int tokens, long seed) {
        if (tweak == null) {
            throw new IllegalStateException("family " + familyName + " is not model-like; it has a WorkloadSpec");
        }
        return tweak.apply(ModelLikeSpec.builder(shape, tokens).seed(seed)).build();
    }

    /** Every family name, in declaration order. */
    public static List<String> names() {
        return Arrays.stream(values()).map(WorkloadFamily::familyName).toList();
    }

    /**
     * The family called {@code name}.
     *
     * @throws IllegalArgumentException naming the allowed names
     */
    public static WorkloadFamily byName(String name) {
        for (WorkloadFamily f : values()) {
            if (f.familyName.equals(name)) {
                return f;
            }
        }
        throw new IllegalArgumentException("family = " + name + " is unknown; allowed: " + String.join(", ", names()));
    }
}

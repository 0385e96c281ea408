package io.kvoffload.strategy.kvswap;

import io.kvoffload.KvSequence;
import io.kvoffload.DType;
import io.kvoffload.KvShape;
import io.kvoffload.DecodeOptions;
import io.kvoffload.KvDecoder;
import io.kvoffload.internal.kvswap.GroupPredictor;
import io.kvoffload.internal.kvswap.KvSwapConfig;
import io.kvoffload.internal.util.Checks;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The runtime settings of KVSwap's offline tuning [KVSwap §3.5, Fig. 4a]: what the JSON file
 * that {@code kvo bench kvswap-tune} (the {@code ParameterTuner}) writes sets in the offline phase
 * ({@link #groupOptions()} for {@link KvSwap#groupLayer}) and in the decoder
 * ({@link #applyTo(DecodeOptions.Builder)}).
 *
 * <pre>{@code
 * KvSwapTuning t = KvSwapTuning.load(Path.of("kvswap.json"));
 * t.checkShape(sequence.shape());
 * for (int l = 0; l < layers; l++) KvSwap.groupLayer(sequence, l, t.groupOptions());
 * sequence.commit();
 * KvDecoder dec = sequence.decoder(t.applyTo(DecodeOptions.builder()).build());
 * }</pre>
 *
 * @param shape the model the file was tuned for ({@link #checkShape} compares it with a sequence's)
 * @param maxContext tokens per sequence tuned for, 1..2^30
 * @param batchSize sequences tuned for, 1..65536
 * @param groupSize G, tokens per group; 1..4096
 * @param rank r, the low-rank adapter's columns (compression ratio σ = kvHeads·headDim / r);
 *     1..kvHeads·headDim
 * @param budgetTokens MG, tokens predicted per step (M = ⌈budgetTokens / G⌉ groups); 1..2^24
 * @param reuseSlots C, reuse-buffer groups per layer; M..2^20
 * @param reusePolicy which reuse slot a missed group overwrites
 * @param rollingGroups groups of newest tokens always attended (the rolling buffer the tuner
 *     measured recall and memory with); 1..1024; the decoder's {@code localWindow} becomes
 *     {@code rollingGroups × G}
 */
public record KvSwapTuning(KvShape shape, int maxContext, int batchSize, int groupSize, int rank, int budgetTokens,
        int reuseSlots, KvSwap.ReusePolicy reusePolicy, int rollingGroups) {

    public KvSwapTuning {
        Checks.notNull("shape", shape);
        Checks.inRange("maxContext", maxContext, 1, 1 << 30);
        Checks.inRange("batchSize", batchSize, 1, 65536);
        Checks.inRange("groupSize", groupSize, 1, 4096);
        Checks.inRange("rank", rank, 1, shape.elementsPerToken());
        Checks.inRange("budgetTokens", budgetTokens, 1, 1 << 24);
        Checks.inRange("reuseSlots", reuseSlots, GroupPredictor.groupsFor(budgetTokens, groupSize), 1 << 20);
        Checks.notNull("reusePolicy", reusePolicy);
        Checks.inRange("rollingGroups", rollingGroups, 1, 1024);
    }

    /**
     * Reads a tuner's JSON file. Every field is checked (unknown or missing keys, types, ranges, the
     * memory block against the settings and the budget); a message names the file, the key, its
     * value and what is allowed.
     *
     * @throws IllegalArgumentException if the file is not a valid KVSwap configuration, or its
     *     compressed K cache is not F16 (the decoder's element type)
     * @throws IOException if it cannot be read
     */
    public static KvSwapTuning load(Path file) throws IOException {
        Checks.notNull("file", file);
        String json = Files.readString(file, StandardCharsets.UTF_8);
        try {
            return fromJson(json);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(file + ": " + e.getMessage(), e);
        }
    }

    /** {@link #load} from the file's text. */
    public static KvSwapTuning fromJson(String json) {
        KvSwapConfig c = KvSwapConfig.fromJson(json);
        // The decoder's compressed K cache is F16; another type was tuned for a different memory footprint.
        if (c.compressedKDtype() != DType.F16) {
            throw new IllegalArgumentException("compressedKDtype = '" + c.compressedKDtype() + "' is not supported by"
                    + " the decoder; allowed: F16");
        }
        return new KvSwapTuning(c.shape(), c.maxContext(), c.batchSize(), c.groupSize(), c.rank(), c.budgetTokens(),
                c.reuseSlots(), KvSwap.ReusePolicy.valueOf(c.reusePolicy().name()), c.rollingGroups());
    }

    /** M = ⌈budgetTokens / G⌉, groups predicted per step. */
    public int groups() {
        return GroupPredictor.groupsFor(budgetTokens, groupSize);
    }

    /** σ = kvHeads·headDim / r. */
    public double compressionRatio() {
        return shape.elementsPerToken() / (double) rank;
    }

    /**
     * Sets what the tuning chose on a decoder's options: the strategy ({@link KvSwap#tuned}: reuse
     * slots C and policy, group options), {@code budgetTokens} (MG) and {@code localWindow} (the
     * tuned rolling buffer, {@code rollingGroups × G}). Setters called afterwards override them.
     */
    public DecodeOptions.Builder applyTo(DecodeOptions.Builder builder) {
        Checks.notNull("builder", builder);
        return builder.strategy(KvSwap.tuned(this).withGroupOptions(groupOptions())).budgetTokens(budgetTokens)
                .localWindow(localWindow());
    }

    /** The decoder's {@code localWindow}: the tuned rolling buffer, {@code rollingGroups × G} tokens. */
    public int localWindow() {
        return rollingGroups * groupSize;
    }

    /** {@link GroupOptions#defaults()} with the tuned G and r (calibration rows and seed at their defaults). */
    public GroupOptions groupOptions() {
        return GroupOptions.defaults().withGroupSize(groupSize).withRank(rank);
    }

    /**
     * Checks that {@code other} (a sequence's shape) has the KV heads, head dimension and element type
     * the file was tuned for: the rank, the group size in bytes and the memory depend on them.
     * Layers and query heads may differ (they scale the memory, not the settings' meaning).
     *
     * @throws IllegalArgumentException naming the first field that differs
     */
    public void checkShape(KvShape other) {
        Checks.notNull("shape", other);
        check("kvHeads", other.kvHeads(), shape.kvHeads());
        check("headDim", other.headDim(), shape.headDim());
        if (other.dtype() != shape.dtype()) {
            throw new IllegalArgumentException("shape.dtype() = " + other.dtype() + " does not match the tuned model's;"
                    + " allowed: " + shape.dtype());
        }
    }

    private static void check(String field, int actual, int tuned) {
        if (actual != tuned) {
            throw new IllegalArgumentException("shape." + field + "() = " + actual + " does not match the tuned model's;"
                    + " allowed: " + tuned);
        }
    }
}

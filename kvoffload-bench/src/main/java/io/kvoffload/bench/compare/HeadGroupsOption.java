package io.kvoffload.bench.compare;

import picocli.CommandLine.Option;

/**
 * The head groups a layout stores a token as ({@code --head-groups}), as a picocli mixin of {@code
 * select-eval} and {@code needle}: the flag, its help and its check declared once.
 */
final class HeadGroupsOption {

    @Option(names = "--head-groups", defaultValue = "1", description = "Head groups the layout stores a token as"
            + " (FetchPlan.headGroups: 1 token-striped; under HEAD_SHARDED up to the KV heads): per-head strategies"
            + " choose one token set per group, and every strategy's bytes are counted per group slice"
            + " (default: ${DEFAULT-VALUE}).")
    int count;

    /** Checks {@code --head-groups} against the layer's KV heads. */
    void check(int kvHeads) {
        if (count < 1 || kvHeads % count != 0) {
            throw new IllegalArgumentException("--head-groups = " + count + "; allowed: a divisor of --kv-heads = " + kvHeads);
        }
    }
}

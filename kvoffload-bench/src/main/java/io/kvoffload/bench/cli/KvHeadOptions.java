package io.kvoffload.bench.cli;

import picocli.CommandLine.Option;

/**
 * The KV-head options ({@code --kv-heads}, {@code --head-dim}) as a picocli mixin, for the commands
 * that derive their query heads themselves (a {@code --group} of query heads per KV head, or a fixed
 * ratio), and as the base of {@link HeadOptions}, which adds {@code --query-heads} (picocli reads the
 * options a mixin inherits): the two flags and their help are declared once. A command picks its own
 * defaults by initialising the field, {@code @Mixin KvHeadOptions heads = new KvHeadOptions(8, 128);}.
 */
public class KvHeadOptions {

    @Option(names = "--kv-heads", description = "KV heads (default: ${DEFAULT-VALUE}).")
    public int kvHeads;

    @Option(names = "--head-dim", description = "Head dimension (default: ${DEFAULT-VALUE}).")
    public int headDim;

    /** A command's own defaults. */
    public KvHeadOptions(int kvHeads, int headDim) {
        this.kvHeads = kvHeads;
        this.headDim = headDim;
    }
}

package io.kvoffload.bench.cli;

import io.kvoffload.DType;
import io.kvoffload.KvShape;
import picocli.CommandLine.Option;

/**
 * The attention-head options every synthetic-workload command shares ({@code --query-heads}, and
 * from {@link KvHeadOptions} {@code --kv-heads} and {@code --head-dim}), as a picocli mixin. A
 * command picks its own defaults by initialising the mixin field, {@code @Mixin HeadOptions heads = new HeadOptions(32, 8, 128);}:
 * picocli keeps that instance and shows the initial values as {@code ${DEFAULT-VALUE}}.
 */
public final class HeadOptions extends KvHeadOptions {

    @Option(names = "--query-heads", description = "Query heads (default: ${DEFAULT-VALUE}).")
    public int queryHeads;

    /** The defaults of a Llama-3-8B-like layer: 32 query heads on 8 KV heads of 128. */
    public HeadOptions() {
        this(32, 8, 128);
    }

    /** A command's own defaults. */
    public HeadOptions(int queryHeads, int kvHeads, int headDim) {
        super(kvHeads, headDim);
        this.queryHeads = queryHeads;
    }

    /** The BF16 shape of {@code layers} layers with these heads. */
    public KvShape shape(int layers) {
        return shape(layers, DType.BF16);
    }

    /** The shape of {@code layers} layers with these heads and element type {@code dtype}. */
    public KvShape shape(int layers, DType dtype) {
        return new KvShape(layers, queryHeads, kvHeads, headDim, dtype);
    }
}

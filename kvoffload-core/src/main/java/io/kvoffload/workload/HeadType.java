package io.kvoffload.workload;

/**
 * What a query head attends to in {@link ModelLikeWorkload}. Within one layer of a real model the
 * heads differ: many attend almost only to the attention sinks and the recent tokens, a few
 * retrieve sharply from anywhere in the context, the rest mix both (DuoAttention, Xiao et al. 2024;
 * RazorAttention, Tang et al. 2024; Retrieval Head, Wu et al. 2024). The logits are in units of
 * the softmax input {@code q·k/√d}.
 */
public enum HeadType {
    /**
     * Streaming (local) head: sinks and a recent window take most of the attention, topics little
     * (StreamingLLM, Xiao et al. 2023; DuoAttention's streaming heads).
     */
    STREAMING(10, 10, 0.5, false),
    /**
     * Retrieval head: sharp, sparse attention on the tokens of one topic wherever they are in the
     * context (Retrieval Head, Wu et al. 2024; RazorAttention's retrieval heads).
     */
    RETRIEVAL(4, 2, 11, true),
    /** Mixed head: sinks, window and several topics at once. */
    MIXED(7, 5, 6, false);

    private final double sinkLogit;
    private final double localLogit;
    private final double topicLogit;
    private final boolean singleTopic;

    HeadType(double sinkLogit, double localLogit, double topicLogit, boolean singleTopic) {
        this.sinkLogit = sinkLogit;
        this.localLogit = localLogit;
        this.topicLogit = topicLogit;
        this.singleTopic = singleTopic;
    }

    /** Logit boost of an attention-sink token. */
    public double sinkLogit() { return sinkLogit; }

    /** Logit boost of the token at distance 0, fading over about the local window. */
    public double localLogit() { return localLogit; }

    /** Logit boost of a token of an attended topic (times the token's salience and the topic's weight). */
    public double topicLogit() { return topicLogit; }

    /** Whether the head attends to its strongest topic only (sharp) rather than to the query's whole mixture. */
    public boolean singleTopic() { return singleTopic; }
}

package io.kvoffload.strategy;

import java.util.Arrays;

/**
 * The positions a {@link LayerSelector} chose for one step. The pipeline fills in the budget, hands
 * the plan to {@link LayerSelector#select}, then serves every position: from DRAM when the window or
 * the hot cache holds it, else from the SSDs through the bucket scheduler. Positions may repeat
 * (they are fetched once) and may include the sinks and the window (they cost nothing).
 *
 * <p>One plan per pipeline slot, reused every step: {@link #add} allocates only when a step selects
 * more positions than any before.
 */
public final class FetchPlan {
    private int[] positions = new int[256];
    private int size;
    private int budget;
    private int tokens;
    private int layer;
    private final UnitReads units = new UnitReads();

    /** Starts a step; called by the pipeline. */
    public void begin(int layer, int tokens, int budget) {
        this.layer = layer;
        this.tokens = tokens;
        this.budget = budget;
        this.size = 0;
    }

    /**
     * The step's auxiliary reads: what {@link LayerSelector#planUnits} asked for, landed and verified
     * by the time {@link LayerSelector#select} runs.
     */
    public UnitReads units() {
        return units;
    }

    /** The layer this step reads. */
    public int layer() {
        return layer;
    }

    /** Tokens the layer holds: positions are in {@code [0, tokens())}. */
    public int tokens() {
        return tokens;
    }

    /**
     * Positions the strategy may add: the step's token budget ({@code ⌈sparsity × tokens⌉}, see
     * {@link io.kvoffload.DecodeOptions#sparsity()}) minus the sinks and window the pipeline
     * already attends; 0 when those fill it.
     */
    public int budget() {
        return budget;
    }

    /**
     * Adds a position.
     *
     * @throws IllegalArgumentException if {@code position} is outside {@code [0, tokens())}
     */
    public void add(int position) {
        if (position < 0 || position >= tokens) {
            throw new IllegalArgumentException("position = " + position + " is out of range for layer " + layer
                    + "; allowed: 0.." + (tokens - 1));
        }
        if (size == positions.length) {
            positions = Arrays.copyOf(positions, size * 2);
        }
        positions[size++] = position;
    }

    /** Adds {@code positions[0..count)} (each checked as {@link #add} does). */
    public void addAll(int[] positions, int count) {
        if (count < 0 || count > positions.length) {
            throw new IllegalArgumentException("count = " + count + " is out of range; allowed: 0.." + positions.length);
        }
        ensureCapacity(size + count);
        for (int i = 0; i < count; i++) {
            add(positions[i]);
        }
    }

    /** Grows the plan's buffer so {@code n} positions fit without allocating. */
    public void ensureCapacity(int n) {
        if (n > positions.length) {
            positions = Arrays.copyOf(positions, Math.max(n, positions.length * 2));
        }
    }

    /** Positions added this step (repeats counted). */
    public int size() {
        return size;
    }

    /** The {@code i}-th position added. */
    public int position(int i) {
        if (i < 0 || i >= size) {
            throw new IndexOutOfBoundsException("i = " + i + "; allowed: 0.." + (size - 1));
        }
        return positions[i];
    }
}

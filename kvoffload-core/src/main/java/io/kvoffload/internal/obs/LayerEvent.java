package io.kvoffload.internal.obs;

import jdk.jfr.Label;

/** A {@link SequenceEvent} about one layer of the sequence: it also records the layer. */
public abstract class LayerEvent extends SequenceEvent {
    @Label("Layer")
    public int layer;
}

package io.kvoffload.internal.obs;

import jdk.jfr.Label;

/**
 * The field every kvoffload JFR event about one sequence records: the sequence's name. Abstract, so
 * JFR registers only its concrete subclasses, which inherit the field.
 */
public abstract class SequenceEvent extends jdk.jfr.Event {
    @Label("Sequence")
    public String sequence;
}

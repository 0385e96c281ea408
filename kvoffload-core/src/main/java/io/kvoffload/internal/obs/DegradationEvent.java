package io.kvoffload.internal.obs;

import jdk.jfr.Category;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** A {@link io.kvoffload.KvDegradation}: something that costs speed or availability without failing a call. */
@Name("io.kvoffload.Degradation")
@Label("KV Degradation")
@Category({"kvoffload", "Health"})
public final class DegradationEvent extends LayerEvent {
    @Label("Kind")
    public String kind;

    @Label("Message")
    public String message;
}

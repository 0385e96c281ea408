package io.kvoffload.internal.obs;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** A committed sequence evicted to make room. */
@Name("io.kvoffload.Eviction")
@Label("KV Eviction")
@Category({"kvoffload", "Storage"})
public final class EvictionEvent extends SequenceEvent {
    @Label("Tokens")
    public int tokens;

    @Label("Freed Bytes")
    @DataAmount
    public long bytes;
}

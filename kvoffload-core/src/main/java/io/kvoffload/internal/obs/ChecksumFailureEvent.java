package io.kvoffload.internal.obs;

import jdk.jfr.Category;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** A record read from an SSD that did not verify (before another copy or a second read is tried). */
@Name("io.kvoffload.ChecksumFailure")
@Label("KV Checksum Failure")
@Category({"kvoffload", "Storage"})
public final class ChecksumFailureEvent extends LayerEvent {
    @Label("Device")
    public int device;

    @Label("First Token")
    public int fromToken;

    @Label("End Token")
    public int toToken;

    @Label("Final")
    @jdk.jfr.Description("No other copy or second read recovered it: the caller got a KvChecksumException")
    public boolean fatal;
}

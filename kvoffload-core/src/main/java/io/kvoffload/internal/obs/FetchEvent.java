package io.kvoffload.internal.obs;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/** One layer's fetch of one decoding step, from {@code prefetch} until {@code await} returned. */
@Name("io.kvoffload.Fetch")
@Label("KV Fetch")
@Category({"kvoffload", "Decode"})
@Description("One layer's fetch of a decoding step: selection, batched SSD reads, verification and gathering")
@StackTrace(false)
public final class FetchEvent extends LayerEvent {
    @Label("Bytes Read")
    @DataAmount
    public long bytes;

    @Label("Reads")
    @Description("Read requests submitted (runs of adjacent entries on one SSD)")
    public long reads;

    @Label("Tokens Fetched")
    @Description("Entries read from the SSDs")
    public long tokensFetched;

    @Label("View Rows")
    public int rows;

    @Label("Select Time")
    @Timespan
    public long selectNanos;

    @Label("I/O Time")
    @Description("From the submission until the last read completed")
    @Timespan
    public long ioNanos;

    @Label("Wait Time")
    @Description("Time the caller spent in await: the part of the fetch not hidden behind its compute")
    @Timespan
    public long waitNanos;
}

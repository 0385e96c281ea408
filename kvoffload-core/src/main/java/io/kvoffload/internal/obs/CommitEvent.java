package io.kvoffload.internal.obs;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A sequence's commit: sealing tails, syncing the devices and writing the manifest. */
@Name("io.kvoffload.Commit")
@Label("KV Commit")
@Category({"kvoffload", "Storage"})
@StackTrace(false)
public final class CommitEvent extends SequenceEvent {
    @Label("Commit Number")
    public long commitNumber;

    @Label("Tokens")
    public int tokens;

    @Label("Stored Bytes")
    @DataAmount
    public long storedBytes;

    @Label("Succeeded")
    public boolean succeeded;
}

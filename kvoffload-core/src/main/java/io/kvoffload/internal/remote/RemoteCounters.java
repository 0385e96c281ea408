package io.kvoffload.internal.remote;

import java.util.concurrent.atomic.LongAdder;

/** What the publisher and the fetch count, for {@link io.kvoffload.RemoteStatus}. */
final class RemoteCounters {
    final LongAdder blocksPublished = new LongAdder();
    final LongAdder blocksAlreadyPresent = new LongAdder();
    final LongAdder bytesPublished = new LongAdder();
    final LongAdder publishFailures = new LongAdder();
    final LongAdder publishesDropped = new LongAdder();
    final LongAdder blocksFetched = new LongAdder();
    final LongAdder bytesFetched = new LongAdder();
    final LongAdder fetchFailures = new LongAdder();
    final LongAdder checksumFailures = new LongAdder();
}

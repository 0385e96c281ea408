package io.kvoffload;

/** Sums the counters of a decoder's {@link KvSwapLayer}s for {@link KvDecoder#stats()}. */
final class KvSwapCounters {
    long selectNanos;
    long ioNanos;
    long bytesRead;
    long readRequests;
    long tokensFetched;
    long tokensReused;
    long tokensWindow;
    long groupsSelected;
    long reuseHits;
    long reuseMisses;
    long memoryBytes;

    void add(KvSwapLayer k) {
        if (k == null) {
            return;
        }
        selectNanos += k.selectNanos;
        ioNanos += k.ioNanos;
        bytesRead += k.bytesRead;
        readRequests += k.readRequests;
        tokensFetched += k.tokensFetched;
        tokensReused += k.tokensReused;
        tokensWindow += k.tokensWindow;
        groupsSelected += k.groupsSelected;
        reuseHits += k.reuseHits;
        reuseMisses += k.reuseMisses;
        memoryBytes += k.memoryBytes();
    }
}

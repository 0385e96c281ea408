package io.kvoffload.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvoffload.KvEngine;
import io.kvoffload.KvSequence;
import io.kvoffload.KvShape;
import io.kvoffload.internal.sequence.SequenceAccess;
import io.kvoffload.internal.storage.DevicePool;
import io.kvoffload.internal.storage.Manifest;
import io.kvoffload.internal.storage.Store;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;

/** Space accounting of a store as an invariant tests check after every step. */
public final class StoreSpace {
    private StoreSpace() {}

    /**
     * Every device's allocated space is exactly the union of the {@code live} sequences' extents (no
     * leak, no double free, nothing a dead sequence names), and each extent has as many holders as
     * live manifests name it. Valid only where nothing is quarantined or reserved for an
     * unavailable sequence.
     */
    public static void assertExactlyLiveExtents(KvEngine e, Collection<String> live, KvShape probeShape) {
        Store store;
        try (KvSequence probe = e.createSequence("space-probe", probeShape)) {
            store = SequenceAccess.of(probe).store();
        }
        Map<Long, Integer> named = new HashMap<>();
        long[] used = new long[store.devices().size()];
        for (String id : live) {
            Manifest m = store.committedManifest(id);
            m.forEachExtent((d, off, len) -> {
                if (named.merge(((long) d << 48) | off, 1, Integer::sum) == 1) {
                    used[d] += len;
                }
            });
        }
        for (DevicePool d : store.devices()) {
            assertEquals(d.allocator().capacity() - used[d.index()], d.allocator().freeBytes(),
                    "device " + d.index() + ": free space is the pool less the live extents' union");
        }
        for (Map.Entry<Long, Integer> x : named.entrySet()) {
            int d = (int) (x.getKey() >>> 48);
            long off = x.getKey() & ((1L << 48) - 1);
            assertEquals(x.getValue().intValue(), store.extentHolders(d, off), "holders of " + d + ":" + off);
        }
    }
}

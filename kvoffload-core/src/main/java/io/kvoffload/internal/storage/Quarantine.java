package io.kvoffload.internal.storage;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Space the store must not reuse because a manifest that may reference it could not be read: every
 * free byte below each device's high-water mark (the {@link StoreRecord}'s bound on what committed
 * manifests use), reserved at open and given back only by an explicit {@link #release}.
 * Not thread-safe: {@link Store} serialises it.
 */
public final class Quarantine {
    private static final Logger LOG = LoggerFactory.getLogger(Quarantine.class);

    /**
     * Why space is quarantined.
     *
     * @param id the sequence no copy of whose manifest could be used, or null for a reason that
     *     names none (missing devices that may hold the only copies)
     * @param files the manifest copies that failed
     * @param reason what was wrong with each
     */
    public record Reason(String id, List<Path> files, String reason) {}

    private final List<Reason> reasons = new ArrayList<>();
    private final List<long[]> ranges = new ArrayList<>(); // {device, offset, length}
    private long bytes;

    void add(Reason r) {
        reasons.add(r);
    }

    boolean isEmpty() {
        return reasons.isEmpty();
    }

    List<Reason> reasons() {
        return List.copyOf(reasons);
    }

    long bytes() {
        return bytes;
    }

    /** Reserves every free byte below each device's high-water mark in {@code record}. */
    void reserve(List<DevicePool> devices, StoreRecord record) {
        for (DevicePool d : devices) {
            for (long[] r : d.allocator().reserveFreeBelow(record.member(d.uuid()).highWater())) {
                ranges.add(new long[] {d.index(), r[0], r[1]});
                bytes += r[1];
            }
        }
        LOG.error("{} quarantine reason(s); {} bytes below the devices' high-water marks are reserved (see"
                + " KvStats.quarantine(); KvEngine.releaseQuarantine() frees them)", reasons.size(), bytes);
    }

    /**
     * The explicit user action that gives the space back: the unusable manifest copies move to a
     * {@code quarantine} folder beside them (kept for inspection, never loaded again) and the
     * reserved space becomes free. Returns the bytes freed.
     */
    long release(ManifestStore manifests, List<DevicePool> devices) throws IOException {
        Set<Path> files = new HashSet<>();
        for (Reason r : reasons) {
            files.addAll(r.files());
        }
        manifests.quarantine(files);
        for (long[] r : ranges) {
            devices.get((int) r[0]).allocator().free(r[1], r[2]);
        }
        long freed = bytes;
        LOG.warn("quarantine released by the user: {} manifest file(s) moved aside, {} bytes freed", files.size(), freed);
        ranges.clear();
        reasons.clear();
        bytes = 0;
        return freed;
    }
}

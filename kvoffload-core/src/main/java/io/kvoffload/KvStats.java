package io.kvoffload;

import java.nio.file.Path;
import java.util.List;

/**
 * A snapshot of an engine's counters.
 *
 * @param ioBackend name of the I/O backend in use
 * @param devices per-device figures, in configuration order
 * @param checksumsVerified extents whose CRC32C was verified on read
 * @param checksumFailures extents that failed verification (each raised a {@link KvChecksumException})
 * @param evictions committed sequences evicted to make room
 * @param dramBudgetBytes the DRAM tier's hard budget
 * @param dramReservedBytes slab memory allocated so far
 * @param dramInUseBytes slot memory handed out now, plus elastic units decoders' caches hold
 * @param unavailableDevices devices of the store that are missing from the configuration or have
 *     failed, with the reason; sequences with data there raise {@link KvDeviceUnavailableException}
 * @param unavailableSequences ids of committed sequences that cannot be served until those devices return
 * @param quarantine why space is quarantined (a manifest no copy of which could be used, or missing
 *     devices that may hold the only manifest copies); empty when none is
 * @param quarantinedBytes pool bytes reserved because of it, freed only by
 *     {@link KvEngine#releaseQuarantine()}
 * @param failovers reads served from another copy of an entry after the copy chosen failed its
 *     checksum or its read (Swarm replicas)
 * @param repairs bad copies rewritten from a good one
 * @param rereads reads of a single-copy extent that failed (checksum or I/O) and verified when
 *     repeated: faults in transit, not on the media
 * @param remoteFailovers reads served from the shared remote tier (its copy verified against the
 *     local checksum) after every local copy failed; each also rewrites the local copy ({@code repairs})
 * @param injectedFaults faults injected so far by kind ({@link KvConfig#faultInjection()}); empty
 *     when no faults are injected
 * @param remote the shared remote tier: whether it is configured and reached, and its counters
 */
public record KvStats(String ioBackend, List<Device> devices, long checksumsVerified, long checksumFailures,
        long evictions, long dramBudgetBytes, long dramReservedBytes, long dramInUseBytes,
        List<UnavailableDevice> unavailableDevices, List<String> unavailableSequences, List<String> quarantine,
        long quarantinedBytes, long failovers, long repairs, long rereads, long remoteFailovers,
        java.util.Map<String, Long> injectedFaults,
        RemoteStatus remote) {

    /**
     * A device that is not serving.
     *
     * @param uuid its identity, or null when its records could not be read
     * @param directory where it is (or was last) found
     * @param reason why it is not serving
     */
    public record UnavailableDevice(String uuid, Path directory, String reason) {}

    /**
     * One device.
     *
     * @param index position among the devices serving (the configuration order, without unavailable ones)
     * @param directory the SSD directory
     * @param capacityBytes pool size
     * @param freeBytes unallocated pool bytes
     * @param directIo whether the pool file is open with O_DIRECT
     * @param bytesWritten bytes written since the engine opened
     * @param bytesRead bytes read since the engine opened
     * @param writes write requests completed
     * @param reads read requests completed
     * @param full whether its file system refused a write for lack of space (ENOSPC) and none has
     *     succeeded since; new extents then go to other devices first
     */
    public record Device(int index, Path directory, long capacityBytes, long freeBytes, boolean directIo,
            long bytesWritten, long bytesRead, long writes, long reads, boolean full) {}

    public long totalBytesRead() {
        return devices.stream().mapToLong(Device::bytesRead).sum();
    }

    public long totalBytesWritten() {
        return devices.stream().mapToLong(Device::bytesWritten).sum();
    }
}

package io.kvoffload.bench.fio;

import io.kvoffload.DecodeStats;
import io.kvoffload.internal.storage.Manifest;
import io.kvoffload.internal.storage.ManifestCodec;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a decoder's fetches looked like to the SSDs, measured: the request-size histogram of its
 * timed fetches ({@link DecodeStats#readSizeCount()} / {@link DecodeStats#readSizeBytes()}), how many
 * reads one fetch submits at once (all of them, up to what the backend keeps in flight), and the
 * data those reads hit (the extents of the fetched sequence, from its committed manifest). A
 * {@link FetchFioJob} is built from it, and {@link FetchFioJob#unlike} checks that it still matches.
 *
 * @param poolFiles each device's pool file, in the manifest's device order
 * @param extents the fetched sequence's extents as {@code {device, offset, length}} (kept sorted, neighbours merged)
 * @param sizeCount reads per size bucket ({@code [2^b, 2^(b+1))} bytes)
 * @param sizeBytes bytes of those reads, by the same buckets
 * @param readsPerFetch mean reads one fetch submitted
 * @param inFlightLimit the most reads the backend keeps in flight (devices × queue depth)
 */
public record FetchShape(List<Path> poolFiles, List<long[]> extents, long[] sizeCount, long[] sizeBytes,
        double readsPerFetch, int inFlightLimit) {
    private static final Pattern UUID = Pattern.compile("\"uuid\"\\s*:\\s*\"([^\"]+)\"");

    public FetchShape {
        poolFiles = List.copyOf(poolFiles);
        extents = coalesce(extents);
        sizeCount = sizeCount.clone();
        sizeBytes = sizeBytes.clone();
        if (sizeCount.length != sizeBytes.length) {
            throw new IllegalArgumentException("sizeCount has " + sizeCount.length + " buckets, sizeBytes "
                    + sizeBytes.length + "; allowed: the same number");
        }
        if (Arrays.stream(sizeCount).sum() <= 0) {
            throw new IllegalArgumentException("sizeCount = " + Arrays.toString(sizeCount)
                    + " counts no read; allowed: a fetch that read from the SSDs");
        }
        if (!(readsPerFetch >= 1) || inFlightLimit < 1) {
            throw new IllegalArgumentException("readsPerFetch = " + readsPerFetch + ", inFlightLimit = "
                    + inFlightLimit + "; allowed: both 1 or more");
        }
        for (long[] e : extents) {
            if (e.length != 3 || e[0] < 0 || e[0] >= poolFiles.size() || e[1] < 0 || e[2] <= 0) {
                throw new IllegalArgumentException("extent " + Arrays.toString(e) + " is not {device in 0.."
                        + (poolFiles.size() - 1) + ", offset >= 0, length > 0}");
            }
        }
        if (extents.isEmpty()) {
            throw new IllegalArgumentException("extents is empty; allowed: the fetched sequence's extents");
        }
    }

    /**
     * The extents sorted by device and offset, neighbours on a device merged: a fetch's run may span
     * two extents that the allocator placed back to back (the scheduler merges by file offset).
     */
    private static List<long[]> coalesce(List<long[]> extents) {
        List<long[]> sorted = new ArrayList<>(extents.stream().map(long[]::clone).toList());
        sorted.sort((a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(a[1], b[1]));
        List<long[]> out = new ArrayList<>();
        for (long[] e : sorted) {
            long[] last = out.isEmpty() ? null : out.get(out.size() - 1);
            if (last != null && last[0] == e[0] && last[1] + last[2] >= e[1]) {
                last[2] = Math.max(last[2], e[1] + e[2] - last[1]);
            } else {
                out.add(e);
            }
        }
        return List.copyOf(out);
    }

    /**
     * The shape of {@code fetches} timed fetches of sequence {@code sequenceId} whose counters are
     * {@code timed}, stored in the devices {@code deviceDirs} of an engine with {@code queueDepth}
     * reads in flight per device.
     */
    public static FetchShape measure(List<Path> deviceDirs, String sequenceId, DecodeStats timed, long fetches,
            int queueDepth) throws IOException {
        if (fetches < 1) {
            throw new IllegalArgumentException("fetches = " + fetches + "; allowed: 1 or more");
        }
        Manifest m = null;
        for (Path d : deviceDirs) {
            Path file = d.resolve("manifests").resolve(sequenceId + ".kvom");
            if (Files.isRegularFile(file)) {
                m = ManifestCodec.decode(Files.readAllBytes(file));
                break;
            }
        }
        if (m == null) {
            throw new IOException("no manifest of sequence " + sequenceId + " in " + deviceDirs);
        }
        // Manifests name devices by UUID: map each to the directory that holds it.
        List<Path> pools = new ArrayList<>();
        for (String uuid : m.deviceUuids()) {
            Path found = null;
            for (Path d : deviceDirs) {
                Matcher u = UUID.matcher(Files.readString(d.resolve("kvoffload-device.json"), StandardCharsets.UTF_8));
                if (u.find() && u.group(1).equals(uuid)) {
                    found = d.resolve("kvoffload.pool");
                }
            }
            if (found == null) {
                throw new IOException("device " + uuid + " of sequence " + sequenceId + " is in none of " + deviceDirs);
            }
            pools.add(found);
        }
        List<long[]> extents = new ArrayList<>();
        m.forEachExtent((device, offset, length) -> extents.add(new long[] {device, offset, length}));
        return new FetchShape(pools, extents, timed.readSizeCount(), timed.readSizeBytes(),
                timed.readRequests() / (double) fetches, Math.multiplyExact(pools.size(), queueDepth));
    }

    /** Reads one fetch has in flight: all it submits, up to the backend's limit. */
    public int inFlight() {
        return (int) Math.max(1, Math.min(inFlightLimit, Math.round(readsPerFetch)));
    }

    /** Mean bytes per read. */
    public double meanReadBytes() {
        return Arrays.stream(sizeBytes).sum() / (double) Arrays.stream(sizeCount).sum();
    }

    /** Share of reads in size bucket {@code b}. */
    public double share(int b) {
        return sizeCount[b] / (double) Arrays.stream(sizeCount).sum();
    }

    @Override
    public long[] sizeCount() {
        return sizeCount.clone();
    }

    @Override
    public long[] sizeBytes() {
        return sizeBytes.clone();
    }

    @Override
    public List<long[]> extents() {
        return extents.stream().map(long[]::clone).toList();
    }
}

package io.kvoffload.iouring;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How many requests the block devices under the pool files queue at once: each distinct device's
 * {@code queue/nr_requests} in sysfs, summed.
 *
 * <p>Why a ring needs it: {@code io_uring_enter} issues the SQEs it submits inline, on the
 * submitting thread, and once a device's request queue is full the kernel puts that thread to sleep
 * until a request completes. With more SQEs in flight than the devices queue, every submit of a
 * decode's reads therefore blocked the decoding thread for milliseconds, while the reads it could
 * have verified and gathered had landed long before (docs/io-uring.md, "Requests the device
 * queues"). Requests beyond the devices' queues gain nothing in the kernel; in the ring's backlog
 * they cost nothing, and every reap moves them in as room frees.
 *
 * <p>Only regular files and block devices on a device that sysfs describes count; a pool file on a
 * file system without one (tmpfs, overlay) makes the whole answer unknown (0), and the ring keeps
 * its configured depth.
 */
public final class BlockQueues {
    private static final Logger LOG = LoggerFactory.getLogger(BlockQueues.class);
    private static final Path SYS_DEV_BLOCK = Path.of("/sys/dev/block");

    private BlockQueues() {}

    /**
     * The sum of {@code nr_requests} over the distinct block devices that hold {@code files}, or 0
     * when any of them is unknown. Benchmarks use it to run fio at the depth the backend keeps.
     */
    public static int requestSlots(List<Path> files) {
        return requestSlots(files, SYS_DEV_BLOCK);
    }

    static int requestSlots(List<Path> files, Path sysDevBlock) {
        Map<String, Integer> perDevice = new LinkedHashMap<>();
        for (Path f : files) {
            String id = deviceId(f);
            if (id == null) {
                return 0;
            }
            if (!perDevice.containsKey(id)) {
                int n = nrRequests(sysDevBlock.resolve(id));
                if (n <= 0) {
                    return 0;
                }
                perDevice.put(id, n);
            }
        }
        long sum = 0;
        for (int n : perDevice.values()) {
            sum += n;
        }
        LOG.debug("block devices under the pool files: {} (nr_requests each)", perDevice);
        return (int) Math.min(Integer.MAX_VALUE, sum);
    }

    /** {@code major:minor} of the device holding {@code f} (or of {@code f} itself, a block device), or null. */
    static String deviceId(Path f) {
        try {
            boolean block = !Files.isRegularFile(f) && !Files.isDirectory(f);
            long dev = ((Number) Files.getAttribute(f, block ? "unix:rdev" : "unix:dev")).longValue();
            // Linux's dev_t encoding (glibc's gnu_dev_major / gnu_dev_minor).
            long major = ((dev >>> 8) & 0xfff) | ((dev >>> 32) & ~0xfffL);
            long minor = (dev & 0xff) | ((dev >>> 12) & ~0xffL);
            return major == 0 ? null : major + ":" + minor; // major 0: an anonymous device (tmpfs, overlay)
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException | ClassCastException e) {
            return null;
        }
    }

    /** {@code queue/nr_requests} of the device at {@code sys} (a partition's is its disk's), or 0. */
    static int nrRequests(Path sys) {
        try {
            Path real = sys.toRealPath();
            for (Path p = real; p != null && p.getNameCount() > 2; p = p.getParent()) {
                Path q = p.resolve("queue").resolve("nr_requests");
                if (Files.isReadable(q)) {
                    return Integer.parseInt(Files.readString(q).trim());
                }
                if (!p.equals(real)) {
                    break; // the disk of a partition is its parent: no further
                }
            }
            return 0;
        } catch (IOException | NumberFormatException e) {
            return 0;
        }
    }
}

package io.kvoffload.iouring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvoffload.spi.IoDevice;
import io.kvoffload.spi.IoOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BlockQueuesTest {
    @TempDir
    Path tmp;

    /** A fake /sys: devices/…/disk/queue/nr_requests, a partition under it, and dev/block links to both. */
    private Path sysWith(String diskId, int nr, String partitionId) throws IOException {
        Path disk = tmp.resolve("sys/devices/virtio0/block/vdz");
        Files.createDirectories(disk.resolve("queue"));
        Files.writeString(disk.resolve("queue/nr_requests"), nr + "\n");
        Path part = Files.createDirectories(disk.resolve("vdz1"));
        Path devBlock = Files.createDirectories(tmp.resolve("sys/dev/block"));
        if (diskId != null) {
            Files.createSymbolicLink(devBlock.resolve(diskId), disk);
        }
        if (partitionId != null) {
            Files.createSymbolicLink(devBlock.resolve(partitionId), part);
        }
        return devBlock;
    }

    @Test
    void aFilesDeviceCountsOnceHoweverManyPoolFilesItHolds() throws IOException {
        Path a = Files.writeString(tmp.resolve("a.pool"), "x");
        Path b = Files.writeString(tmp.resolve("b.pool"), "y");
        String id = BlockQueues.deviceId(a);
        assumeTrue(id != null, "the temp directory is on an anonymous device (tmpfs?)");
        Path sys = sysWith(id, 256, null);
        assertEquals(256, BlockQueues.requestSlots(List.of(a, b, a), sys), "one disk: its nr_requests, once");
    }

    @Test
    void aPartitionsQueueIsItsDisks() throws IOException {
        Path a = Files.writeString(tmp.resolve("a.pool"), "x");
        String id = BlockQueues.deviceId(a);
        assumeTrue(id != null, "the temp directory is on an anonymous device (tmpfs?)");
        Path sys = sysWith(null, 64, id); // the file's device is the partition vdz1
        assertEquals(64, BlockQueues.requestSlots(List.of(a), sys));
    }

    @Test
    void anUnknownDeviceLeavesTheDepthAlone() throws IOException {
        Path a = Files.writeString(tmp.resolve("a.pool"), "x");
        assumeTrue(BlockQueues.deviceId(a) != null, "the temp directory is on an anonymous device (tmpfs?)");
        Path sys = sysWith("9999:9999", 256, null); // describes another device only
        assertEquals(0, BlockQueues.requestSlots(List.of(a), sys));
        assertEquals(0, BlockQueues.requestSlots(List.of(tmp.resolve("missing.pool")), sys));
    }

    @Test
    void theBackendKeepsARingWithinTheDevicesQueue() throws IOException {
        IoUringTestSupport.requireIoUring();
        List<IoDevice> devices = IoUringTestSupport.devices(tmp, 4, 1 << 20, 7);
        int slots = BlockQueues.requestSlots(devices.stream().map(IoDevice::poolFile).toList());
        IoOptions options = new IoOptions(true, 128, 128);
        IoUringConfig config = IoUringConfig.defaults(options, devices.size());
        assertEquals(512, config.maxInflight());
        try (IoUringBackend limited = IoUringBackend.open(devices, options, config);
                IoUringBackend unlimited = IoUringBackend.open(devices, options, config.withDeviceQueueLimit(false))) {
            int expected = slots > 0 ? Math.min(512, slots) : 512;
            assertEquals(expected, limited.maxInflight(), "devices queue " + slots);
            assertEquals(512, unlimited.maxInflight());
        }
    }
}

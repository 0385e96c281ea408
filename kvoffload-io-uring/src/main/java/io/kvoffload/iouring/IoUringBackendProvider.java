package io.kvoffload.iouring;

import io.kvoffload.iouring.bindings.IoUringException;
import io.kvoffload.iouring.bindings.IoUringRing;
import io.kvoffload.iouring.bindings.Liburing;
import io.kvoffload.iouring.bindings.libc_h;
import io.kvoffload.iouring.bindings.liburing_h;
import io.kvoffload.spi.Availability;
import io.kvoffload.spi.IoBackend;
import io.kvoffload.spi.IoBackendProvider;
import io.kvoffload.spi.IoDevice;
import io.kvoffload.spi.IoOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Provides the io_uring backend ({@code "io_uring"}, priority 100, so it wins over the portable
 * backend wherever {@link #probe()} says it can run).
 */
public final class IoUringBackendProvider implements IoBackendProvider {
    public static final String NAME = "io_uring";
    public static final int PRIORITY = 100;

    private static final Path IO_URING_DISABLED = Path.of("/proc/sys/kernel/io_uring_disabled");

    private static volatile Availability cached;

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public int priority() {
        return PRIORITY;
    }

    /**
     * Whether io_uring works here: liburing.so.2 loads, the sysctl does not forbid io_uring, and
     * the kernel sets up a small ring (a seccomp filter or an old kernel refuses with EPERM or
     * ENOSYS). Runs once per JVM (a few hundred microseconds); never throws.
     */
    @Override
    public Availability probe() {
        Availability a = cached;
        if (a == null) {
            a = probeNow();
            cached = a;
        }
        return a;
    }

    private static Availability probeNow() {
        try {
            String reason = Liburing.unavailableReason();
            if (reason != null) {
                return Availability.no(reason);
            }
            int disabled = readDisabledSysctl();
            if (disabled == 2) {
                return Availability.no("io_uring is disabled for all processes: sysctl kernel.io_uring_disabled = 2"
                        + " (set it to 0)");
            }
            // 1 lets privileged processes and members of kernel.io_uring_group through, so try.
            try (IoUringRing ring = IoUringRing.create(2, 0, 0)) {
                if ((ring.features() & liburing_h.IORING_FEAT_RW_CUR_POS) == 0) {
                    return Availability.no("the kernel's io_uring lacks IORING_OP_READ/WRITE (Linux 5.6 or newer"
                            + " is needed)");
                }
                return Availability.yes("liburing.so.2 loaded; io_uring features 0x"
                        + Integer.toHexString(ring.features()));
            } catch (IoUringException e) {
                return Availability.no(explain(e.errno(), disabled));
            }
        } catch (Throwable t) {
            return Availability.no("io_uring probe failed: " + t);
        }
    }

    private static String explain(int errno, int disabled) {
        if (errno == libc_h.EPERM) {
            return disabled == 1
                    ? "io_uring_setup is not permitted (EPERM): sysctl kernel.io_uring_disabled = 1 allows it only"
                            + " to CAP_SYS_ADMIN and kernel.io_uring_group"
                    : "io_uring_setup is not permitted (EPERM): a seccomp filter forbids it (container runtimes"
                            + " block io_uring by default; allow io_uring_setup/enter/register)";
        }
        if (errno == libc_h.ENOSYS) {
            return "io_uring_setup does not exist (ENOSYS): the kernel is older than 5.1, built without"
                    + " CONFIG_IO_URING, or a seccomp filter hides it";
        }
        if (errno == libc_h.ENOMEM) {
            return "io_uring_setup failed (ENOMEM): on kernels before 5.12 ring memory counts against"
                    + " RLIMIT_MEMLOCK; raise ulimit -l";
        }
        return "io_uring_queue_init failed: " + io.kvoffload.iouring.bindings.Posix.describe(errno);
    }

    private static int readDisabledSysctl() {
        try {
            if (Files.isReadable(IO_URING_DISABLED)) {
                return Integer.parseInt(Files.readString(IO_URING_DISABLED).trim());
            }
        } catch (IOException | NumberFormatException | SecurityException e) {
            return 0;
        }
        return 0;
    }

    @Override
    public IoBackend open(List<IoDevice> devices, IoOptions options) throws IOException {
        Availability a = probe();
        if (!a.available()) {
            throw new IOException("io_uring backend unavailable: " + a.reason());
        }
        return IoUringBackend.open(devices, options, IoUringConfig.defaults(options, devices.size()));
    }
}

package io.kvoffload;

import com.fasterxml.jackson.jr.ob.JSON;
import io.kvoffload.internal.storage.FileModes;
import io.kvoffload.internal.util.Checks;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Engine configuration. Build one with {@link #builder()} or read one from a JSON file with
 * {@link #load(Path)}; every value is validated when {@link Builder#build()} runs. See
 * docs/configuration.md for every key, its default and its range.
 */
public final class KvConfig {
    /** Backend name meaning: the available backend with the highest priority. */
    public static final String AUTO = "auto";

    /**
     * Whether the engine uses a GPU (HBM) tier: {@link #AUTO} when a provider is present and its probe
     * says the GPU works, {@code ON} always (failing with the probe's reason where it cannot),
     * {@code OFF} never.
     */
    public enum Gpu {
        AUTO, ON, OFF;

        /** Parses {@code auto}, {@code on} or {@code off} (any case). */
        public static Gpu parse(String value) {
            Checks.notNull("gpu", value);
            for (Gpu g : values()) {
                if (g.name().equalsIgnoreCase(value.trim())) {
                    return g;
                }
            }
            throw new IllegalArgumentException("gpu = '" + value + "'; allowed: auto, on, off");
        }
    }

    private final List<Path> ssdDirectories;
    private final Path metadataDirectory;
    private final long dramBudgetBytes;
    private final long dramSlabBytes;
    private final boolean dramHugePages;
    private final long deviceCapacityBytes;
    private final int blockTokens;
    private final boolean checksums;
    private final String ioBackend;
    private final boolean directIo;
    private final int directIoAlignment;
    private final int queueDepth;
    private final Placement placement;
    private final int ioThreadsPerDevice;
    private final Gpu gpu;
    private final int gpuDevice;
    private final long gpuCacheBudgetBytes;
    private final DeviceModelSpec deviceModel;
    private final int metadataCopies;
    private final FaultInjection faultInjection;
    private final String fileMode;
    private final RemoteConfig remote;

    private KvConfig(Builder b) {
        this.ssdDirectories = List.copyOf(b.ssdDirectories);
        this.metadataDirectory = b.metadataDirectory;
        this.dramBudgetBytes = b.dramBudgetBytes;
        this.dramSlabBytes = b.dramSlabBytes;
        this.dramHugePages = b.dramHugePages;
        this.deviceCapacityBytes = b.deviceCapacityBytes;
        this.blockTokens = b.blockTokens;
        this.checksums = b.checksums;
        this.ioBackend = b.ioBackend;
        this.directIo = b.directIo;
        this.directIoAlignment = b.directIoAlignment;
        this.queueDepth = b.queueDepth;
        this.placement = b.placement;
        this.ioThreadsPerDevice = b.ioThreadsPerDevice;
        this.gpu = b.gpu;
        this.gpuDevice = b.gpuDevice;
        this.gpuCacheBudgetBytes = b.gpuCacheBudgetBytes;
        this.deviceModel = b.deviceModel;
        this.metadataCopies = b.metadataCopies;
        this.faultInjection = b.faultInjection;
        this.fileMode = FileModes.parse("fileMode", b.fileMode).octal();
        this.remote = b.remote;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** One directory per SSD; each holds that device's pool file. */
    public List<Path> ssdDirectories() {
        return ssdDirectories;
    }

    /**
     * An extra directory that holds a copy of every manifest (counted in {@link #metadataCopies()}),
     * or null (the default): manifests then live only in the {@code manifests} folders of the devices.
     */
    public Path metadataDirectory() {
        return metadataDirectory;
    }

    /**
     * How many copies of each manifest a commit writes (the metadata directory, then devices in UUID
     * order); at least two by default, so that one damaged or missing device loses no sequence.
     */
    public int metadataCopies() {
        return metadataCopies;
    }

    /** The shared remote tier (docs/remote.md), or null (the default): the engine then keeps its KV locally only. */
    public RemoteConfig remote() {
        return remote;
    }

    /** Faults injected into every I/O (for tests and fault campaigns only), or null (the default). */
    public FaultInjection faultInjection() {
        return faultInjection;
    }

    /**
     * Permissions of the files the store creates (directories get execute where read is set):
     * {@code 600} by default, since the KV cache is derived from prompts.
     */
    public String fileMode() {
        return fileMode;
    }

    public long dramBudgetBytes() {
        return dramBudgetBytes;
    }

    public long dramSlabBytes() {
        return dramSlabBytes;
    }

    /**
     * Whether DRAM slabs are fresh anonymous mappings aligned to 2 MiB and advised for transparent
     * huge pages (the default), so registered I/O buffers reach the device in 2 MiB segments;
     * false allocates them through the JDK's native allocator (malloc).
     */
    public boolean dramHugePages() {
        return dramHugePages;
    }

    /** Size of the pool file on each SSD. */
    public long deviceCapacityBytes() {
        return deviceCapacityBytes;
    }

    /** Tokens per block: the unit of placement, I/O, checksums and prefix hashing. */
    public int blockTokens() {
        return blockTokens;
    }

    /** Whether reads verify each extent's CRC32C (it is always recorded). */
    public boolean checksums() {
        return checksums;
    }

    public String ioBackend() {
        return ioBackend;
    }

    public boolean directIo() {
        return directIo;
    }

    /** Direct-I/O alignment in bytes; 0 means detect from the file system (at least 4096). */
    public int directIoAlignment() {
        return directIoAlignment;
    }

    public int queueDepth() {
        return queueDepth;
    }

    /** How layouts written by this engine spread entries over the SSDs (default {@link Placement#TOKEN_STRIPED}). */
    public Placement placement() {
        return placement;
    }

    public int ioThreadsPerDevice() {
        return ioThreadsPerDevice;
    }

    /** Whether to use a GPU (HBM) tier; see {@link Gpu}. */
    public Gpu gpu() {
        return gpu;
    }

    /** Index of the GPU the device tier uses. */
    public int gpuDevice() {
        return gpuDevice;
    }

    /**
     * Byte budget of the HBM hot cache (0 = none). Device memory is taken in chunks as clusters are
     * admitted, never more than this; the budget can change at run time through the tier.
     */
    public long gpuCacheBudgetBytes() {
        return gpuCacheBudgetBytes;
    }

    /**
     * The simulated SSD every device behaves like, or null (the default) for the real devices
     * as they are. With a model the backend's name contains {@code simulated}.
     */
    public DeviceModelSpec deviceModel() {
        return deviceModel;
    }

    /**
     * Reads a JSON configuration file. Sizes may be numbers of bytes or strings with a unit
     * ({@code "512MiB"}, {@code "4GiB"}); relative directories resolve against the file's folder.
     */
    public static KvConfig load(Path file) throws IOException {
        Map<String, Object> map;
        try {
            map = JSON.std.mapFrom(Files.readString(file));
        } catch (IOException e) {
            if (!Files.exists(file)) {
                throw new java.nio.file.NoSuchFileException(file.toString(), null, "configuration file not found");
            }
            throw new IOException("configuration file " + file + " is not valid JSON: " + e.getMessage(), e);
        }
        Path base = file.toAbsolutePath().getParent();
        return ConfigFile.fromMap(map, base);
    }

    /** Parses a byte count: a number, or a string like {@code 64KiB}, {@code 512MiB}, {@code 2GiB}. */
    public static long parseSize(String name, Object v) {
        if (v instanceof Number n) {
            return n.longValue();
        }
        String s = String.valueOf(v).trim().toUpperCase(Locale.ROOT).replace(" ", "");
        long mult = 1;
        String[][] units = {{"TIB", "1099511627776"}, {"GIB", "1073741824"}, {"MIB", "1048576"}, {"KIB", "1024"},
            {"TB", "1000000000000"}, {"GB", "1000000000"}, {"MB", "1000000"}, {"KB", "1000"}, {"B", "1"}};
        for (String[] u : units) {
            if (s.endsWith(u[0])) {
                mult = Long.parseLong(u[1]);
                s = s.substring(0, s.length() - u[0].length());
                break;
            }
        }
        try {
            return Math.multiplyExact(Long.parseLong(s), mult);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException(name + " = '" + v
                    + "' is not a size; allowed: a number of bytes or a number with KiB, MiB, GiB, TiB (or KB, MB, GB, TB)");
        }
    }

    @Override
    public String toString() {
        return "KvConfig{ssdDirectories=" + ssdDirectories + ", metadataDirectory=" + metadataDirectory()
                + ", dramBudgetBytes=" + dramBudgetBytes + ", dramSlabBytes=" + dramSlabBytes
                + ", dramHugePages=" + dramHugePages
                + ", deviceCapacityBytes=" + deviceCapacityBytes + ", blockTokens=" + blockTokens
                + ", checksums=" + checksums + ", ioBackend=" + ioBackend + ", directIo=" + directIo
                + ", directIoAlignment=" + directIoAlignment + ", queueDepth=" + queueDepth + ", placement=" + placement
                + ", ioThreadsPerDevice=" + ioThreadsPerDevice + ", gpu=" + gpu + ", gpuDevice=" + gpuDevice
                + ", gpuCacheBudgetBytes=" + gpuCacheBudgetBytes + ", deviceModel=" + deviceModel + ", metadataCopies=" + metadataCopies
                + ", fileMode=" + fileMode + (faultInjection != null ? ", faultInjection=" + faultInjection : "")
                + (remote != null ? ", remote=" + remote : "") + "}";
    }

    /** Builder with the documented defaults. */
    public static final class Builder {
        private List<Path> ssdDirectories = List.of();
        private Path metadataDirectory;
        private int metadataCopies = 2;
        private FaultInjection faultInjection;
        private String fileMode = "600";
        private long dramBudgetBytes = 256L << 20;
        private long dramSlabBytes = 4L << 20;
        private boolean dramHugePages = true;
        private long deviceCapacityBytes = 1L << 30;
        private int blockTokens = 16;
        private boolean checksums = true;
        private String ioBackend = AUTO;
        private boolean directIo = true;
        private int directIoAlignment = 0;
        private int queueDepth = 128;
        private Placement placement = Placement.TOKEN_STRIPED;
        private int ioThreadsPerDevice = 4;
        private Gpu gpu = Gpu.AUTO;
        private int gpuDevice = 0;
        private long gpuCacheBudgetBytes = 256L << 20;
        private DeviceModelSpec deviceModel;
        private RemoteConfig remote;

        private Builder() {}

        /** The shared remote tier (docs/remote.md); null (default) for none. */
        public Builder remote(RemoteConfig config) {
            this.remote = config;
            return this;
        }

        public Builder ssdDirectories(List<Path> dirs) {
            this.ssdDirectories = List.copyOf(Checks.notNull("ssdDirectories", dirs));
            return this;
        }

        public Builder ssdDirectories(Path... dirs) {
            return ssdDirectories(List.of(dirs));
        }

        public Builder metadataDirectory(Path dir) {
            this.metadataDirectory = dir;
            return this;
        }

        /** Copies of each manifest, 1..16 (default 2; fewer where there are fewer devices). */
        public Builder metadataCopies(int copies) {
            this.metadataCopies = copies;
            return this;
        }

        /** Faults to inject into every I/O, for tests and fault campaigns; null (default) for none. */
        public Builder faultInjection(FaultInjection spec) {
            this.faultInjection = spec;
            return this;
        }

        /** Octal permissions of created files, e.g. {@code "600"} (default) or {@code "640"}. */
        public Builder fileMode(String mode) {
            this.fileMode = mode;
            return this;
        }

        public Builder dramBudgetBytes(long bytes) {
            this.dramBudgetBytes = bytes;
            return this;
        }

        public Builder dramSlabBytes(long bytes) {
            this.dramSlabBytes = bytes;
            return this;
        }

        /** See {@link KvConfig#dramHugePages()}; default true. */
        public Builder dramHugePages(boolean on) {
            this.dramHugePages = on;
            return this;
        }

        public Builder deviceCapacityBytes(long bytes) {
            this.deviceCapacityBytes = bytes;
            return this;
        }

        public Builder blockTokens(int tokens) {
            this.blockTokens = tokens;
            return this;
        }

        public Builder checksums(boolean on) {
            this.checksums = on;
            return this;
        }

        public Builder ioBackend(String name) {
            this.ioBackend = Checks.notNull("ioBackend", name);
            return this;
        }

        public Builder directIo(boolean on) {
            this.directIo = on;
            return this;
        }

        public Builder directIoAlignment(int bytes) {
            this.directIoAlignment = bytes;
            return this;
        }

        public Builder queueDepth(int depth) {
            this.queueDepth = depth;
            return this;
        }

        /** How layouts written by this engine spread entries over the SSDs ({@link Placement}). */
        public Builder placement(Placement placement) {
            this.placement = Checks.notNull("placement", placement);
            return this;
        }

        public Builder ioThreadsPerDevice(int threads) {
            this.ioThreadsPerDevice = threads;
            return this;
        }

        /** Whether to use a GPU tier: {@code AUTO} (default), {@code ON} or {@code OFF}. */
        public Builder gpu(Gpu mode) {
            this.gpu = Checks.notNull("gpu", mode);
            return this;
        }

        public Builder gpuDevice(int index) {
            this.gpuDevice = index;
            return this;
        }

        public Builder gpuCacheBudgetBytes(long bytes) {
            this.gpuCacheBudgetBytes = bytes;
            return this;
        }

        /**
         * Makes every device behave like a simulated SSD of {@code spec} (bandwidth, IOPS, latency
         * floor and queue of its own) on top of the real backend; null (the default) for none.
         * Every request still really happens on the device's files. See {@link DeviceModelSpec}.
         */
        public Builder deviceModel(DeviceModelSpec spec) {
            this.deviceModel = spec;
            return this;
        }

        /** {@link #deviceModel(DeviceModelSpec)} by profile name: {@code high-end}, {@code low-end} or {@code none}. */
        public Builder deviceModel(String profile) {
            this.deviceModel = ConfigFile.parseDeviceModel(Checks.notNull("deviceModel", profile));
            return this;
        }

        /** Validates every value and builds the configuration. */
        public KvConfig build() {
            if (ssdDirectories.isEmpty() || ssdDirectories.size() > 256) {
                throw new IllegalArgumentException("ssdDirectories has " + ssdDirectories.size()
                        + " entries; allowed: 1..256 directories, one per SSD");
            }
            Set<Path> seen = new java.util.HashSet<>();
            for (Path p : ssdDirectories) {
                Checks.notNull("ssdDirectories[i]", p);
                if (!seen.add(p.toAbsolutePath().normalize())) {
                    throw new IllegalArgumentException("ssdDirectories lists " + p + " twice; each SSD once");
                }
            }
            Checks.inRange("dramBudgetBytes", dramBudgetBytes, 1L << 20, Long.MAX_VALUE / 2);
            Checks.inRange("dramSlabBytes", dramSlabBytes, 4096, 1L << 30);
            if (dramSlabBytes % 4096 != 0) {
                throw new IllegalArgumentException("dramSlabBytes = " + dramSlabBytes + " must be a multiple of 4096");
            }
            Checks.inRange("deviceCapacityBytes", deviceCapacityBytes, 1L << 20, 1L << 50);
            Checks.inRange("blockTokens", blockTokens, 1, 65536);
            if (directIoAlignment != 0) {
                Checks.powerOfTwo("directIoAlignment", directIoAlignment);
                Checks.inRange("directIoAlignment", directIoAlignment, 512, 1 << 20);
            }
            Checks.inRange("queueDepth", queueDepth, 1, 32768);
            Checks.inRange("metadataCopies", metadataCopies, 1, 16);
            Checks.notNull("fileMode", fileMode);
            FileModes.parse("fileMode", fileMode);
            Checks.inRange("ioThreadsPerDevice", ioThreadsPerDevice, 1, 256);
            Checks.inRange("gpuDevice", gpuDevice, 0, 1023);
            Checks.inRange("gpuCacheBudgetBytes", gpuCacheBudgetBytes, 0, 1L << 50);
            if (ioBackend.isBlank()) {
                throw new IllegalArgumentException("ioBackend is blank; allowed: 'auto' or a backend name such as"
                        + " 'portable' or 'io_uring'");
            }
            if (deviceModel != null) {
                deviceModel.effectiveScale(ssdDirectories.size()); // rejects scaleDevices below the device count
            }
            return new KvConfig(this);
        }
    }
}

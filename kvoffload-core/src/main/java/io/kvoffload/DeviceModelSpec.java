package io.kvoffload;

import io.kvoffload.internal.util.Checks;
import java.util.List;
import java.util.Locale;

/**
 * A simulated SSD: the limits a device model (see {@link KvConfig.Builder#deviceModel}) imposes on
 * every device of an engine, on top of the real I/O, so that several directories on one physical
 * disk behave like several independent SSDs. Every request still really happens on the real pool
 * files; the model only delays completions until the simulated device would have finished them.
 * Figures measured through a model are simulated, and the backend name says so
 * ({@code io_uring+simulated:high-end}).
 *
 * <p><b>Profiles.</b> The two SSD types of the Swarm paper's evaluation (§6, "Hardware"):
 * {@value #HIGH_END} is a Samsung PM9A3 (6.9 GB/s, 1.1M IOPS), {@value #LOW_END} an Intel Optane
 * 900P (2.5 GB/s, 0.55M IOPS). The paper gives no latencies; the floors here are typical
 * QD1 4 KiB random-read latencies (≈80 µs for a PCIe 4.0 TLC datacenter NVMe drive, 10 µs from
 * Intel's 900P specification). {@value #CUSTOM} takes bandwidth, IOPS and latency as given.
 *
 * <p><b>Scaling.</b> One physical disk cannot feed eight PM9A3s, so the profile's bandwidth and
 * IOPS are multiplied by one scale factor chosen so that the sum over {@link #scaleDevices} devices
 * stays within what the host disk delivers: {@code min(1, hostBandwidth / (n × bandwidth),
 * hostIops / (n × iops))}. For the named profiles the high-end profile sets the factor, so both
 * profiles keep the paper's ratio between them; a custom profile scales against itself. A
 * configured {@link #scale} replaces the computed one. The latency floor is never scaled. The
 * host limits default to the fio figures of the development machine (1.4 GiB/s at 64 KiB,
 * 145k IOPS at 4 KiB, io_uring, O_DIRECT, iodepth 64); {@code kvo bench scaling} measures them.
 *
 * @param profile {@value #HIGH_END}, {@value #LOW_END} or {@value #CUSTOM}
 * @param bandwidthBytesPerSecond the unscaled device's bandwidth, 1 MB/s .. 1 TB/s
 * @param iops the unscaled device's requests per second, 100 .. 100M
 * @param latencyNanos the least time from submission to completion of any request, 0 .. 1 s
 * @param queueDepth requests the simulated device works on at once, 1 .. 1024
 * @param scale the scale factor, or 0 to compute it from the host limits; 0 or (0, 1]
 * @param scaleDevices the device count the computed scale is for, or 0 for the number of devices
 *     the model wraps; 0 .. 256. A benchmark that compares 1..8 devices sets 8 so that every
 *     device is equally fast at every count
 * @param hostBandwidthBytesPerSecond what the real disk delivers at large requests, 1 MB/s .. 1 TB/s
 * @param hostIops what the real disk delivers at small requests, 100 .. 100M
 */
public record DeviceModelSpec(String profile, long bandwidthBytesPerSecond, long iops, long latencyNanos,
        int queueDepth, double scale, int scaleDevices, long hostBandwidthBytesPerSecond, long hostIops) {

    public static final String HIGH_END = "high-end";
    public static final String LOW_END = "low-end";
    public static final String CUSTOM = "custom";
    /** The profile names a configuration may use. */
    public static final List<String> PROFILES = List.of(HIGH_END, LOW_END, CUSTOM);

    /** Samsung PM9A3, the Swarm paper's high-end SSD. */
    public static final long HIGH_END_BANDWIDTH = 6_900_000_000L;
    public static final long HIGH_END_IOPS = 1_100_000L;
    public static final long HIGH_END_LATENCY_NANOS = 80_000L;
    /** Intel Optane 900P, the Swarm paper's low-end SSD. */
    public static final long LOW_END_BANDWIDTH = 2_500_000_000L;
    public static final long LOW_END_IOPS = 550_000L;
    public static final long LOW_END_LATENCY_NANOS = 10_000L;
    public static final int DEFAULT_QUEUE_DEPTH = 128;
    /** fio on the development machine: ≈1.4 GiB/s at 64 KiB random reads (docs/REFERENCE facts). */
    public static final long DEFAULT_HOST_BANDWIDTH = 1_400L << 20;
    /** fio on the development machine: 145k IOPS at 4 KiB random reads. */
    public static final long DEFAULT_HOST_IOPS = 145_000L;

    static final long MIN_BANDWIDTH = 1_000_000L;
    static final long MAX_BANDWIDTH = 1_000_000_000_000L;
    static final long MIN_IOPS = 100L;
    static final long MAX_IOPS = 100_000_000L;
    static final long MAX_LATENCY_NANOS = 1_000_000_000L;
    static final int MAX_QUEUE_DEPTH = 1024;
    static final int MAX_SCALE_DEVICES = 256;

    /** Validates every value; messages name the key ({@code deviceModel.<component>}), value and range. */
    public DeviceModelSpec {
        Checks.notNull("deviceModel.profile", profile);
        if (!PROFILES.contains(profile)) {
            throw new IllegalArgumentException("deviceModel.profile = '" + profile + "' is unknown; allowed: " + PROFILES
                    + " (or 'none' in a configuration for no model)");
        }
        Checks.inRange("deviceModel.bandwidth", bandwidthBytesPerSecond, MIN_BANDWIDTH, MAX_BANDWIDTH);
        Checks.inRange("deviceModel.iops", iops, MIN_IOPS, MAX_IOPS);
        Checks.inRange("deviceModel.latencyNanos", latencyNanos, 0, MAX_LATENCY_NANOS);
        Checks.inRange("deviceModel.queueDepth", queueDepth, 1, MAX_QUEUE_DEPTH);
        if (!(scale == 0 || (scale > 0 && scale <= 1))) { // also rejects NaN
            throw new IllegalArgumentException("deviceModel.scale = " + scale
                    + " is out of range; allowed: 0 (computed from the host limits) or a factor in (0, 1]");
        }
        Checks.inRange("deviceModel.scaleDevices", scaleDevices, 0, MAX_SCALE_DEVICES);
        Checks.inRange("deviceModel.hostBandwidth", hostBandwidthBytesPerSecond, MIN_BANDWIDTH, MAX_BANDWIDTH);
        Checks.inRange("deviceModel.hostIops", hostIops, MIN_IOPS, MAX_IOPS);
        if (!profile.equals(CUSTOM)) {
            DeviceModelSpec p = named(profile);
            if (bandwidthBytesPerSecond != p.bandwidthBytesPerSecond || iops != p.iops
                    || latencyNanos != p.latencyNanos) {
                throw new IllegalArgumentException("deviceModel.profile = '" + profile + "' fixes bandwidth "
                        + p.bandwidthBytesPerSecond + " B/s, iops " + p.iops + " and latency " + p.latencyNanos
                        + " ns; got " + bandwidthBytesPerSecond + ", " + iops + ", " + latencyNanos
                        + ". Use profile '" + CUSTOM + "' to set them");
            }
        }
    }

    private static DeviceModelSpec named(String profile) {
        return switch (profile) {
            case HIGH_END -> HIGH_END_SPEC;
            case LOW_END -> LOW_END_SPEC;
            default -> throw new IllegalArgumentException("deviceModel.profile = '" + profile + "' is unknown; allowed: "
                    + PROFILES);
        };
    }

    private static final DeviceModelSpec HIGH_END_SPEC = new DeviceModelSpec(CUSTOM, HIGH_END_BANDWIDTH, HIGH_END_IOPS,
            HIGH_END_LATENCY_NANOS, DEFAULT_QUEUE_DEPTH, 0, 0, DEFAULT_HOST_BANDWIDTH, DEFAULT_HOST_IOPS);
    private static final DeviceModelSpec LOW_END_SPEC = new DeviceModelSpec(CUSTOM, LOW_END_BANDWIDTH, LOW_END_IOPS,
            LOW_END_LATENCY_NANOS, DEFAULT_QUEUE_DEPTH, 0, 0, DEFAULT_HOST_BANDWIDTH, DEFAULT_HOST_IOPS);

    /** The high-end profile (Samsung PM9A3), scaled automatically to the default host limits. */
    public static DeviceModelSpec highEnd() {
        return profile(HIGH_END);
    }

    /** The low-end profile (Intel Optane 900P), scaled automatically to the default host limits. */
    public static DeviceModelSpec lowEnd() {
        return profile(LOW_END);
    }

    /** A named profile: {@value #HIGH_END} or {@value #LOW_END} (case-insensitive). */
    public static DeviceModelSpec profile(String name) {
        Checks.notNull("deviceModel.profile", name);
        String p = name.trim().toLowerCase(Locale.ROOT);
        if (p.equals(CUSTOM)) {
            throw new IllegalArgumentException("deviceModel.profile = 'custom' needs bandwidth, iops and latency;"
                    + " use DeviceModelSpec.custom(...)");
        }
        DeviceModelSpec s = named(p);
        return new DeviceModelSpec(p, s.bandwidthBytesPerSecond, s.iops, s.latencyNanos, DEFAULT_QUEUE_DEPTH, 0, 0,
                DEFAULT_HOST_BANDWIDTH, DEFAULT_HOST_IOPS);
    }

    /** A custom device, scaled automatically (only down, never up) to the default host limits. */
    public static DeviceModelSpec custom(long bandwidthBytesPerSecond, long iops, long latencyNanos) {
        return new DeviceModelSpec(CUSTOM, bandwidthBytesPerSecond, iops, latencyNanos, DEFAULT_QUEUE_DEPTH, 0, 0,
                DEFAULT_HOST_BANDWIDTH, DEFAULT_HOST_IOPS);
    }

    public DeviceModelSpec withQueueDepth(int depth) {
        return new DeviceModelSpec(profile, bandwidthBytesPerSecond, iops, latencyNanos, depth, scale, scaleDevices,
                hostBandwidthBytesPerSecond, hostIops);
    }

    /** A fixed scale factor in (0, 1], or 0 to compute it from the host limits. */
    public DeviceModelSpec withScale(double factor) {
        return new DeviceModelSpec(profile, bandwidthBytesPerSecond, iops, latencyNanos, queueDepth, factor,
                scaleDevices, hostBandwidthBytesPerSecond, hostIops);
    }

    /** The device count the computed scale is for (0: the number of devices wrapped). */
    public DeviceModelSpec withScaleDevices(int devices) {
        return new DeviceModelSpec(profile, bandwidthBytesPerSecond, iops, latencyNanos, queueDepth, scale, devices,
                hostBandwidthBytesPerSecond, hostIops);
    }

    /** What the real disk under all simulated devices delivers (measured, e.g. with fio). */
    public DeviceModelSpec withHost(long bandwidthBytesPerSecond, long iopsLimit) {
        return new DeviceModelSpec(profile, this.bandwidthBytesPerSecond, this.iops, latencyNanos, queueDepth, scale,
                scaleDevices, bandwidthBytesPerSecond, iopsLimit);
    }

    /**
     * The scale factor applied when the model wraps {@code deviceCount} devices.
     *
     * @throws IllegalArgumentException if {@link #scaleDevices} is set and smaller than
     *     {@code deviceCount} (the sum over the devices could then exceed the host disk)
     */
    public double effectiveScale(int deviceCount) {
        Checks.inRange("deviceCount", deviceCount, 1, MAX_SCALE_DEVICES);
        if (scaleDevices != 0 && scaleDevices < deviceCount) {
            throw new IllegalArgumentException("deviceModel.scaleDevices = " + scaleDevices + " is less than the "
                    + deviceCount + " devices the model wraps; allowed: 0 (= the device count) or " + deviceCount
                    + ".." + MAX_SCALE_DEVICES);
        }
        if (scale != 0) {
            return scale;
        }
        int n = scaleDevices == 0 ? deviceCount : scaleDevices;
        DeviceModelSpec ref = profile.equals(CUSTOM) ? this : HIGH_END_SPEC;
        double s = Math.min((double) hostBandwidthBytesPerSecond / ((double) n * ref.bandwidthBytesPerSecond),
                (double) hostIops / ((double) n * ref.iops));
        return Math.min(1.0, s);
    }

    /** One simulated device's bandwidth (bytes/s) at {@code deviceCount} devices. */
    public double deviceBandwidth(int deviceCount) {
        return bandwidthBytesPerSecond * effectiveScale(deviceCount);
    }

    /** One simulated device's IOPS at {@code deviceCount} devices. */
    public double deviceIops(int deviceCount) {
        return iops * effectiveScale(deviceCount);
    }

    /** A one-line description for logs and reports. */
    public String describe(int deviceCount) {
        return String.format(Locale.ROOT, "simulated %s SSD: %.1f MB/s, %.0f IOPS, latency >= %d us, queue depth %d"
                + " per device (profile %.2f GB/s, %d IOPS, scale %.4f)", profile, deviceBandwidth(deviceCount) / 1e6,
                deviceIops(deviceCount), latencyNanos / 1000, queueDepth, bandwidthBytesPerSecond / 1e9, iops,
                effectiveScale(deviceCount));
    }
}

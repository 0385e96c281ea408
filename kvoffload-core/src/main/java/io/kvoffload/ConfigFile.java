package io.kvoffload;

import io.kvoffload.internal.util.Checks;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The JSON form of a {@link KvConfig} ({@link KvConfig#load}): its keys and how each value is read,
 * every wrong key or value refused by name with what is allowed (docs/configuration.md).
 */
final class ConfigFile {
    private ConfigFile() {
    }

    /** The keys of a configuration file. */
    static final Set<String> KEYS = new TreeSet<>(List.of("ssdDirectories", "metadataDirectory", "dramBudget",
            "dramSlab", "dramHugePages", "deviceCapacity", "blockTokens", "checksums", "ioBackend", "directIo",
            "directIoAlignment", "queueDepth", "placement", "ioThreadsPerDevice", "gpu", "gpuDevice", "gpuCacheBudget",
            "deviceModel", "metadataCopies", "fileMode", "faultInjection", "remote"));

    /** The keys of a {@code faultInjection} object in a configuration file. */
    static final Set<String> FAULT_KEYS = new TreeSet<>(List.of("seed", "eio", "tornRead", "bitFlipRead",
            "bitFlipDisk", "tornWrite", "enospc", "latencySpike", "latencySpikeMillis", "vanishDevice",
            "vanishAfterRequests", "onlyDevice", "limit"));

    /** The keys of a {@code deviceModel} object in a configuration file. */
    static final Set<String> DEVICE_MODEL_KEYS = new TreeSet<>(List.of("profile", "bandwidth", "iops",
            "latencyMicros", "queueDepth", "scale", "scaleDevices", "hostBandwidth", "hostIops"));

    /** A configuration from a JSON object's map; relative directories resolve against {@code base}. */
    static KvConfig fromMap(Map<String, Object> map, Path base) {
        KvConfig.Builder b = KvConfig.builder();
        for (Map.Entry<String, Object> e : map.entrySet()) {
            String k = e.getKey();
            Object v = e.getValue();
            switch (k) {
                case "ssdDirectories" -> {
                    if (!(v instanceof List<?> list)) {
                        throw new IllegalArgumentException("ssdDirectories must be a list of paths; got " + v);
                    }
                    List<Path> dirs = new ArrayList<>();
                    for (Object o : list) {
                        dirs.add(base.resolve(String.valueOf(o)));
                    }
                    b.ssdDirectories(dirs);
                }
                case "metadataDirectory" -> b.metadataDirectory(base.resolve(String.valueOf(v)));
                case "dramBudget" -> b.dramBudgetBytes(KvConfig.parseSize(k, v));
                case "dramSlab" -> b.dramSlabBytes(KvConfig.parseSize(k, v));
                case "dramHugePages" -> b.dramHugePages(parseBool(k, v));
                case "deviceCapacity" -> b.deviceCapacityBytes(KvConfig.parseSize(k, v));
                case "blockTokens" -> b.blockTokens(parseInt(k, v));
                case "checksums" -> b.checksums(parseBool(k, v));
                case "ioBackend" -> b.ioBackend(String.valueOf(v));
                case "directIo" -> b.directIo(parseBool(k, v));
                case "directIoAlignment" -> b.directIoAlignment(parseInt(k, v));
                case "queueDepth" -> b.queueDepth(parseInt(k, v));
                case "placement" -> b.placement(parsePlacement(k, v));
                case "ioThreadsPerDevice" -> b.ioThreadsPerDevice(parseInt(k, v));
                case "gpu" -> b.gpu(KvConfig.Gpu.parse(String.valueOf(v)));
                case "gpuDevice" -> b.gpuDevice(parseInt(k, v));
                case "gpuCacheBudget" -> b.gpuCacheBudgetBytes(KvConfig.parseSize(k, v));
                case "deviceModel" -> b.deviceModel(parseDeviceModel(v));
                case "metadataCopies" -> b.metadataCopies(parseInt(k, v));
                case "fileMode" -> b.fileMode(String.valueOf(v));
                case "faultInjection" -> b.faultInjection(parseFaultInjection(v));
                case "remote" -> b.remote(RemoteConfig.parse(v, base));
                default -> throw new IllegalArgumentException(
                        "unknown configuration key '" + k + "'; allowed keys: " + KEYS);
            }
        }
        return b.build();
    }

    /**
     * A {@code deviceModel} value: null or {@code "none"} (no model), a profile name, or an object
     * with {@code profile} and optional {@link #DEVICE_MODEL_KEYS} (bandwidth and host bandwidth are
     * sizes per second, e.g. {@code "500MB"}).
     */
    static DeviceModelSpec parseDeviceModel(Object v) {
        if (v == null || (v instanceof String str && str.trim().equalsIgnoreCase("none"))) {
            return null;
        }
        if (v instanceof String str) {
            return DeviceModelSpec.profile(str);
        }
        if (!(v instanceof Map<?, ?> map)) {
            throw new IllegalArgumentException("deviceModel = '" + v + "' is not allowed; allowed: 'none', a profile "
                    + DeviceModelSpec.PROFILES + " or an object with keys " + DEVICE_MODEL_KEYS);
        }
        for (Object key : map.keySet()) {
            if (!DEVICE_MODEL_KEYS.contains(String.valueOf(key))) {
                throw new IllegalArgumentException("unknown configuration key 'deviceModel." + key + "'; allowed keys: "
                        + DEVICE_MODEL_KEYS);
            }
        }
        Object profileValue = map.get("profile");
        if (profileValue == null) {
            throw new IllegalArgumentException("deviceModel.profile is missing; allowed: " + DeviceModelSpec.PROFILES);
        }
        String profile = String.valueOf(profileValue).trim().toLowerCase(Locale.ROOT);
        DeviceModelSpec spec;
        if (profile.equals(DeviceModelSpec.CUSTOM)) {
            for (String required : List.of("bandwidth", "iops", "latencyMicros")) {
                if (!map.containsKey(required)) {
                    throw new IllegalArgumentException("deviceModel." + required + " is missing; profile 'custom' needs"
                            + " bandwidth, iops and latencyMicros");
                }
            }
            long latencyMicros = parseLong("deviceModel.latencyMicros", map.get("latencyMicros"));
            Checks.inRange("deviceModel.latencyMicros", latencyMicros, 0, 1_000_000);
            spec = DeviceModelSpec.custom(KvConfig.parseSize("deviceModel.bandwidth", map.get("bandwidth")),
                    parseLong("deviceModel.iops", map.get("iops")), latencyMicros * 1000);
        } else {
            for (String fixed : List.of("bandwidth", "iops", "latencyMicros")) {
                if (map.containsKey(fixed)) {
                    throw new IllegalArgumentException("deviceModel." + fixed + " is only allowed with profile 'custom';"
                            + " profile '" + profile + "' fixes it");
                }
            }
            spec = DeviceModelSpec.profile(profile);
        }
        if (map.containsKey("queueDepth")) {
            spec = spec.withQueueDepth(parseInt("deviceModel.queueDepth", map.get("queueDepth")));
        }
        if (map.containsKey("scale")) {
            spec = spec.withScale(parseDouble("deviceModel.scale", map.get("scale")));
        }
        if (map.containsKey("scaleDevices")) {
            spec = spec.withScaleDevices(parseInt("deviceModel.scaleDevices", map.get("scaleDevices")));
        }
        long hostBw = map.containsKey("hostBandwidth") ? KvConfig.parseSize("deviceModel.hostBandwidth",
                map.get("hostBandwidth")) : spec.hostBandwidthBytesPerSecond();
        long hostIops = map.containsKey("hostIops") ? parseLong("deviceModel.hostIops", map.get("hostIops"))
                : spec.hostIops();
        return spec.withHost(hostBw, hostIops);
    }

    static FaultInjection parseFaultInjection(Object v) {
        if (v == null || (v instanceof String str && str.trim().equalsIgnoreCase("none"))) {
            return null;
        }
        if (!(v instanceof Map<?, ?> map)) {
            throw new IllegalArgumentException("faultInjection = '" + v + "' is not allowed; allowed: 'none' or an object"
                    + " with keys " + FAULT_KEYS);
        }
        for (Object key : map.keySet()) {
            if (!FAULT_KEYS.contains(String.valueOf(key))) {
                throw new IllegalArgumentException("unknown configuration key 'faultInjection." + key
                        + "'; allowed keys: " + FAULT_KEYS);
            }
        }
        FaultInjection.Builder b = FaultInjection.builder(map.containsKey("seed")
                ? parseLong("faultInjection.seed", map.get("seed")) : 0);
        java.util.function.ToDoubleFunction<String> p = k -> map.containsKey(k)
                ? parseDouble("faultInjection." + k, map.get(k)) : 0;
        b.eio(p.applyAsDouble("eio")).tornRead(p.applyAsDouble("tornRead")).bitFlipRead(p.applyAsDouble("bitFlipRead"))
                .bitFlipDisk(p.applyAsDouble("bitFlipDisk")).tornWrite(p.applyAsDouble("tornWrite"))
                .enospc(p.applyAsDouble("enospc"));
        b.latencySpikes(p.applyAsDouble("latencySpike"), map.containsKey("latencySpikeMillis")
                ? parseInt("faultInjection.latencySpikeMillis", map.get("latencySpikeMillis")) : 0);
        if (map.containsKey("vanishDevice")) {
            b.vanishingDevice(parseInt("faultInjection.vanishDevice", map.get("vanishDevice")),
                    map.containsKey("vanishAfterRequests")
                            ? parseLong("faultInjection.vanishAfterRequests", map.get("vanishAfterRequests")) : 0);
        }
        if (map.containsKey("onlyDevice")) {
            b.onlyOnDevice(parseInt("faultInjection.onlyDevice", map.get("onlyDevice")));
        }
        if (map.containsKey("limit")) {
            b.atMost(parseLong("faultInjection.limit", map.get("limit")));
        }
        return b.build();
    }

    static long parseLong(String name, Object v) {
        if (v instanceof Number n && n.doubleValue() == n.longValue()) {
            return n.longValue();
        }
        try {
            return Long.parseLong(String.valueOf(v).trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " = '" + v + "' is not an integer");
        }
    }

    private static double parseDouble(String name, Object v) {
        if (v instanceof Number n) {
            return n.doubleValue();
        }
        try {
            return Double.parseDouble(String.valueOf(v).trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " = '" + v + "' is not a number");
        }
    }

    static int parseInt(String name, Object v) {
        long n = parseLong(name, v);
        if (n != (int) n) {
            throw new IllegalArgumentException(name + " = '" + v + "' is out of range; allowed: " + Integer.MIN_VALUE
                    + ".." + Integer.MAX_VALUE);
        }
        return (int) n;
    }

    static Placement parsePlacement(String name, Object v) {
        String s = String.valueOf(v).trim().toUpperCase(java.util.Locale.ROOT).replace('-', '_');
        for (Placement p : Placement.values()) {
            if (p.name().equals(s)) {
                return p;
            }
        }
        throw new IllegalArgumentException(name + " = '" + v + "' is not a placement; allowed: "
                + java.util.Arrays.toString(Placement.values()));
    }

    static boolean parseBool(String name, Object v) {
        if (v instanceof Boolean bool) {
            return bool;
        }
        String s = String.valueOf(v).trim();
        if (s.equalsIgnoreCase("true") || s.equalsIgnoreCase("false")) {
            return Boolean.parseBoolean(s);
        }
        throw new IllegalArgumentException(name + " = '" + v + "' is not a boolean; allowed: true, false");
    }
}

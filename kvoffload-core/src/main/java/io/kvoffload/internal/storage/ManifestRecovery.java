package io.kvoffload.internal.storage;

import io.kvoffload.KvConfig;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Set;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Rebuilds, at open, the catalog of committed sequences and the allocators' used space from the
 * manifest copies on every reachable directory, deciding for each sequence which copy to trust, and
 * what cannot be trusted: sequences on unavailable devices, and space to quarantine.
 */
final class ManifestRecovery {
    private static final Logger LOG = LoggerFactory.getLogger(ManifestRecovery.class);

    private final KvConfig config;
    private final DeviceSet deviceSet;
    private final StoreRecord record;
    private final List<DevicePool> devices;
    private final List<String> deviceUuids;
    private final SequenceCatalog catalog;
    private final ManifestStore manifests;
    private final SharedExtents shared;
    private final Tombstones tombstones;
    /**
     * Extents marked so far, {@code device << 48 | offset} → {length, manifests naming it as their
     * own}: a second manifest may name an extent only as a shared (forked) block, and no two as their own.
     */
    private final Map<Long, long[]> claims = new HashMap<>();
    /** What {@link #load} found that degrades the store without failing the open (reported once it is open). */
    final List<io.kvoffload.KvDegradation> found = new ArrayList<>();
    /**
     * Sequences loaded from fewer current copies in the write directories than there are write
     * directories (a crash part-way through a commit's copies leaves that): {@link #reReplicate}
     * writes them again, so that a device going away later cannot hide the only copy, which would
     * let the sequence's extents be handed to another.
     */
    final List<ManifestStore.Copy> underReplicated = new ArrayList<>();

    ManifestRecovery(KvConfig config, DeviceSet deviceSet, StoreRecord record, List<DevicePool> devices,
            List<String> deviceUuids, SequenceCatalog catalog, ManifestStore manifests, SharedExtents shared,
            Tombstones tombstones) {
        this.shared = shared;
        this.tombstones = tombstones;
        this.config = config;
        this.deviceSet = deviceSet;
        this.record = record;
        this.devices = devices;
        this.deviceUuids = deviceUuids;
        this.catalog = catalog;
        this.manifests = manifests;
    }

    /**
     * Rebuilds the catalog and the allocators from the manifests. For each sequence the newest copy
     * that decodes, names only this store's devices and claims no space another manifest claims is
     * used. A sequence with a device missing is listed as unavailable with its space reserved. A
     * sequence with no usable copy is quarantined, and so is (conservatively) every free byte below
     * each device's high-water mark, since its manifest may reference any of it.
     */
    Quarantine load() {
        Quarantine quarantine = new Quarantine();
        Map<String, Integer> healthyIndex = new HashMap<>();
        for (DevicePool d : devices) {
            healthyIndex.put(d.uuid(), d.index());
        }
        for (Map.Entry<String, List<ManifestStore.Copy>> e : manifests.loadAll().entrySet()) {
            List<ManifestStore.Copy> copies = new ArrayList<>(e.getValue());
            if (dropBuried(e.getKey(), copies)) {
                continue;
            }
            copies.sort(Comparator.comparingLong((ManifestStore.Copy c) -> c.manifest() == null ? Long.MIN_VALUE
                    : c.manifest().commitNumber()).reversed());
            List<String> reasons = new ArrayList<>();
            boolean loaded = false;
            long newest = copies.get(0).manifest() == null ? -1 : copies.get(0).manifest().commitNumber();
            for (int i = 0; i < copies.size() && !loaded; ) {
                ManifestStore.Copy c = copies.get(i);
                if (c.manifest() == null) {
                    reasons.add(c.file() + ": " + c.error());
                    i++;
                    continue;
                }
                // Copies of one commit are byte-identical when written by this store; copies that
                // disagree mean one was rewritten (even with a valid CRC): trust neither, try an older one.
                int j = i;
                boolean agree = true;
                while (j < copies.size() && copies.get(j).manifest() != null
                        && copies.get(j).manifest().commitNumber() == c.manifest().commitNumber()) {
                    agree &= copies.get(j).digest() == c.digest();
                    j++;
                }
                if (!agree) {
                    reasons.add("the copies of commit " + c.manifest().commitNumber() + " disagree: "
                            + copies.subList(i, j).stream().map(ManifestStore.Copy::file).toList());
                    i = j;
                    continue;
                }
                String why = adopt(c.manifest(), healthyIndex);
                if (why == null) {
                    if (c.manifest().commitNumber() < newest) {
                        LOG.warn("sequence {}: using commit {} from {}; the newer copies did not verify: {}", e.getKey(),
                                c.manifest().commitNumber(), c.file(), reasons);
                        found.add(new io.kvoffload.KvDegradation(io.kvoffload.KvDegradation.Kind.MANIFEST_IGNORED,
                                e.getKey(), -1, "using commit " + c.manifest().commitNumber() + " from " + c.file()
                                        + "; the newer copies did not verify: " + reasons));
                    }
                    loaded = true;
                    if (currentCopiesInWriteDirs(copies, c.manifest().commitNumber()) < manifests.writeDirs().size()) {
                        underReplicated.add(c);
                    }
                } else {
                    reasons.add(c.file() + ": " + why);
                    i = j;
                }
            }
            if (!loaded) {
                Quarantine.Reason q = new Quarantine.Reason(e.getKey(),
                        copies.stream().map(ManifestStore.Copy::file).toList(), String.join("; ", reasons));
                quarantine.add(q);
                LOG.error("sequence {} cannot be loaded from any copy ({}); its space is quarantined until"
                        + " KvEngine.releaseQuarantine()", q.id(), q.reason());
                found.add(new io.kvoffload.KvDegradation(io.kvoffload.KvDegradation.Kind.MANIFEST_QUARANTINED, q.id(), -1,
                        "cannot be loaded from any copy (" + q.reason() + "); its space is quarantined until"
                                + " KvEngine.releaseQuarantine()"));
            }
        }
        long missing = deviceSet.unavailable().stream().filter(u -> u.uuid() != null
                && !config.ssdDirectories().contains(u.directory())).count();
        if (missing >= config.metadataCopies()) {
            quarantine.add(new Quarantine.Reason(null, List.of(), missing + " member device(s) are missing, as many as"
                    + " metadataCopies = " + config.metadataCopies() + ": manifests kept only there cannot be read"));
        }
        if (!quarantine.isEmpty()) {
            quarantine.reserve(devices, record);
        }
        LOG.info("{} committed sequences found in {}", catalog.all().size(), manifests.readDirs());
        return quarantine;
    }

    /** How many write directories hold {@code commit} as their current copy (not a previous generation). */
    private int currentCopiesInWriteDirs(List<ManifestStore.Copy> copies, long commit) {
        int n = 0;
        for (ManifestStore.Copy c : copies) {
            if (c.manifest() != null && c.manifest().commitNumber() == commit
                    && c.file().getFileName().toString().endsWith(ManifestStore.SUFFIX)
                    && manifests.writeDirs().contains(c.file().getParent())) {
                n++;
            }
        }
        return n;
    }

    /**
     * Writes every {@link #underReplicated} sequence's copy, byte for byte, to each write directory
     * that lacks it ({@link ManifestStore#replicate}). A failure is logged and leaves the sequence as it
     * was (still served from the copy it has).
     */
    void reReplicate() {
        for (ManifestStore.Copy c : underReplicated) {
            Manifest m = c.manifest();
            try {
                manifests.replicate(c);
                LOG.warn("sequence {}: commit {} had fewer manifest copies than the {} directories commits write to"
                        + " (a crash part-way through its commit?); its copy written again where it was missing", m.id(),
                        m.commitNumber(), manifests.writeDirs().size());
            } catch (IOException e) {
                LOG.warn("sequence {}: could not restore its missing manifest copies: {}", m.id(), e.toString());
            }
        }
        underReplicated.clear();
    }

    /**
     * Drops from {@code copies} those a deletion tombstone buries (a device that was away when the
     * sequence was deleted or evicted kept them), logging and reporting them; returns true when
     * nothing else is left, so that the sequence stays deleted and its space free.
     */
    private boolean dropBuried(String id, List<ManifestStore.Copy> copies) {
        List<java.nio.file.Path> buried = new ArrayList<>();
        for (ManifestStore.Copy c : copies) {
            if (c.manifest() != null) {
                tombstones.noteCopy(id, c.manifest().commitNumber());
                if (tombstones.buries(c.manifest())) {
                    buried.add(c.file());
                }
            }
        }
        if (buried.isEmpty()) {
            return false;
        }
        copies.removeIf(c -> buried.contains(c.file()));
        String what = "ignoring " + buried.size() + " copies of deleted sequence " + id + " (a device that was"
                + " unreachable when it was deleted or evicted kept them): " + buried;
        LOG.warn("{}", what);
        found.add(new io.kvoffload.KvDegradation(io.kvoffload.KvDegradation.Kind.MANIFEST_IGNORED, id, -1, what));
        return copies.isEmpty();
    }

    /**
     * Puts a decoded manifest into the catalog and marks its extents used; returns null, or the
     * reason the copy cannot be used (nothing is then marked).
     */
    private String adopt(Manifest m, Map<String, Integer> healthyIndex) {
        int[] map = new int[m.deviceUuids().size()];
        String missingDevice = null;
        for (int i = 0; i < map.length; i++) {
            String u = m.deviceUuids().get(i);
            Integer idx = healthyIndex.get(u);
            if (idx != null) {
                map[i] = idx;
            } else if (record.member(u) != null || !deviceSet.recordWasPresent() || deviceSet.hasUnidentified()) {
                // A member that is not here; or, where membership is not fully known (no record yet,
                // or a directory that could not be identified), possibly one: unavailable, not foreign.
                map[i] = -1;
                missingDevice = u;
            } else {
                return "names device " + u + ", which is not a member of this store";
            }
        }
        Manifest local;
        if (missingDevice != null) {
            Manifest through = throughCopies(m, map);
            if (through != null) {
                LOG.warn("sequence {} has data on missing device {}, all of it also stored on present devices: served"
                        + " through those copies", m.id(), missingDevice);
                return adopt(through, healthyIndex);
            }
        }
        if (missingDevice == null) {
            try {
                ManifestCodec.validate(m, devices);
            } catch (IllegalArgumentException e) {
                return e.getMessage();
            }
            ClusterLayout[] clusters = new ClusterLayout[m.clusters().length];
            for (int l = 0; l < clusters.length; l++) {
                clusters[l] = m.clusters()[l] == null ? null : m.clusters()[l].remapDevices(map);
            }
            local = remapped(m, map, clusters);
        } else {
            local = m;
        }
        Set<Long> sharedHere = new HashSet<>();
        for (BlockTable t : local.layers()) {
            for (int b = 0; b < t.size(); b++) {
                if (t.shared(b)) {
                    int dev = local == m ? map[t.device(b)] : t.device(b);
                    if (dev >= 0) {
                        sharedHere.add(key(dev, t.offset(b)));
                    }
                }
            }
        }
        List<long[]> marked = new ArrayList<>();
        try {
            local.forEachExtent((d, off, len) -> {
                int dev = local == m ? map[d] : d;
                if (dev >= 0) {
                    claim(dev, off, len, sharedHere.contains(key(dev, off)));
                    marked.add(new long[] {dev, off, len});
                }
            });
        } catch (IllegalStateException | IllegalArgumentException e) {
            for (long[] x : marked) {
                unclaim((int) x[0], x[1], x[2], !sharedHere.contains(key((int) x[0], x[1])));
            }
            return e.getMessage();
        }
        if (missingDevice != null) {
            String why = "sequence " + m.id() + " has data on device " + missingDevice + ", which is unavailable: "
                    + deviceSet.unavailable().stream().filter(u -> missingUuid(u, m)).map(DeviceSet.Unavailable::reason)
                            .findFirst().orElse("missing");
            catalog.putUnavailable(m, why, marked);
            LOG.warn("{}", why);
        } else {
            catalog.put(local, 0, false);
        }
        return null;
    }

    private static long key(int device, long offset) {
        return ((long) device << 48) | offset;
    }

    /**
     * Marks an extent a manifest names: used, the first time; one more holder when it was marked
     * before and either naming is a shared block of the same length.
     *
     * @throws IllegalStateException if the extent overlaps another, or two manifests name it as their own
     */
    private void claim(int dev, long off, long len, boolean sharedBlock) {
        long k = key(dev, off);
        long[] c = claims.get(k);
        if (c == null) {
            devices.get(dev).allocator().markUsed(off, len);
            claims.put(k, new long[] {len, sharedBlock ? 0 : 1});
            return;
        }
        if (c[0] != len || (!sharedBlock && c[1] > 0)) {
            throw new IllegalStateException("extent [" + off + ", " + (off + len) + ") of device " + dev
                    + " is already in use" + (c[0] == len ? " by another sequence's own block" : ""));
        }
        shared.share(dev, off);
        if (!sharedBlock) {
            c[1]++;
        }
    }

    /** Undoes {@link #claim} (a copy that cannot be used after all). */
    private void unclaim(int dev, long off, long len, boolean own) {
        long k = key(dev, off);
        long[] c = claims.get(k);
        if (own) {
            c[1]--;
        }
        if (shared.release(dev, off)) {
            devices.get(dev).allocator().free(off, len);
            claims.remove(k);
        }
    }

    /**
     * {@code m} in the present devices' numbering, when everything it stores on missing devices
     * ({@code map} −1) is a Swarm cluster entry with another copy on a present device: the layouts
     * without those segments. Null when a block, a group or a token's last copy is on a missing device.
     */
    private Manifest throughCopies(Manifest m, int[] map) {
        for (BlockTable t : m.layers()) {
            for (int b = 0; b < t.size(); b++) {
                if (t.hasExtent(b) && map[t.device(b)] < 0) {
                    return null;
                }
            }
        }
        for (GroupLayout g : m.groups()) {
            for (int s = 0; g != null && s < g.segmentCount(); s++) {
                if (map[g.segmentDevice(s)] < 0) {
                    return null;
                }
            }
        }
        for (UnitLayout u : m.units()) {
            for (int s = 0; u != null && s < u.segmentCount(); s++) {
                if (map[u.segmentDevice(s)] < 0) {
                    return null;
                }
            }
        }
        ClusterLayout[] clusters = new ClusterLayout[m.clusters().length];
        for (int l = 0; l < clusters.length; l++) {
            if (m.clusters()[l] != null) {
                clusters[l] = m.clusters()[l].withoutMissingDevices(map, deviceUuids.size());
                if (clusters[l] == null) {
                    return null;
                }
            }
        }
        Manifest through = remapped(m, map, clusters);
        try {
            ManifestCodec.validate(through, devices);
        } catch (IllegalArgumentException e) {
            return null;
        }
        return through;
    }

    /**
     * {@code m} in the engine's device numbering through {@code map}, with {@code clusters} (already
     * renumbered) as its cluster layouts; the block tables are copied, not changed.
     */
    private Manifest remapped(Manifest m, int[] map, ClusterLayout[] clusters) {
        BlockTable[] layers = new BlockTable[m.layers().length];
        for (int l = 0; l < layers.length; l++) {
            layers[l] = m.layers()[l].copy();
            layers[l].remapDevices(map);
        }
        GroupLayout[] groups = new GroupLayout[m.groups().length];
        for (int l = 0; l < groups.length; l++) {
            groups[l] = m.groups()[l] == null ? null : m.groups()[l].remapDevices(map);
        }
        UnitLayout[] units = new UnitLayout[m.units().length];
        for (int l = 0; l < units.length; l++) {
            units[l] = m.units()[l] == null ? null : m.units()[l].remapDevices(map);
        }
        return new Manifest(m.id(), m.shape(), m.blockTokens(), deviceUuids, m.tokenIds(), layers, clusters, groups,
                units, m.commitMillis(), m.commitNumber(), m.identityChecksums());
    }

    private static boolean missingUuid(DeviceSet.Unavailable u, Manifest m) {
        return u.uuid() != null && m.deviceUuids().contains(u.uuid());
    }
}

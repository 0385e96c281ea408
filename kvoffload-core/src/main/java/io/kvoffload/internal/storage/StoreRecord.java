package io.kvoffload.internal.storage;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The store-level record of which devices make up a store, written to every device directory as
 * {@code kvoffload-store.json} on each open and whenever a high-water mark moves. It is how an
 * engine knows, whatever the order or subset of directories it is given, which devices exist, which
 * one a directory is (its {@code self}) and which are missing.
 *
 * <p>Each member's high-water mark bounds the bytes of its pool that committed manifests may use:
 * it is raised (and this record made durable) before a manifest that extends past it is written.
 * When some manifest cannot be read, the space below the marks is quarantined rather than reused,
 * because that manifest may reference any of it.
 *
 * @param storeUuid the store's identity, shared by all its devices
 * @param generation incremented on each write; the newest copy that verifies wins
 * @param self the device this copy lives on (null for a record not yet written)
 * @param members every device the store has had, in the order they joined
 */
public record StoreRecord(String storeUuid, long generation, String self, List<Member> members) {
    public static final String FILE = "kvoffload-store.json";
    static final int FORMAT = 1;

    /**
     * A device of the store.
     *
     * @param uuid the device's identity (also in its {@code kvoffload-device.json})
     * @param poolBytes its pool size
     * @param alignment its direct-I/O alignment
     * @param lastPath the directory it was last opened from (used only to recover a device whose own
     *     records were both damaged)
     * @param highWater no committed extent on it ends past this offset
     */
    public record Member(String uuid, long poolBytes, int alignment, String lastPath, long highWater) {}

    public Member member(String uuid) {
        for (Member m : members) {
            if (m.uuid.equals(uuid)) {
                return m;
            }
        }
        return null;
    }

    public StoreRecord withSelf(String uuid) {
        return new StoreRecord(storeUuid, generation, uuid, members);
    }

    /**
     * This record with each device's high-water mark raised to cover {@code ends[d]} (device {@code d}
     * of {@code devices}), or this record itself when every mark already does. Marks move in steps of
     * a 32nd of the pool so that the record is rewritten rarely.
     */
    StoreRecord withHighWater(List<DevicePool> devices, long[] ends) {
        List<Member> next = new java.util.ArrayList<>(members);
        boolean changed = false;
        for (int d = 0; d < ends.length; d++) {
            DevicePool p = devices.get(d);
            for (int i = 0; i < next.size(); i++) {
                Member x = next.get(i);
                if (x.uuid().equals(p.uuid()) && ends[d] > x.highWater()) {
                    long step = Math.max(p.alignment(), p.sizeBytes() / 32);
                    long hw = Math.min(p.sizeBytes(), (ends[d] + step - 1) / step * step);
                    next.set(i, new Member(x.uuid(), x.poolBytes(), x.alignment(), x.lastPath(), hw));
                    changed = true;
                }
            }
        }
        return changed ? new StoreRecord(storeUuid, generation + 1, null, List.copyOf(next)) : this;
    }

    byte[] encode() throws IOException {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("format", FORMAT);
        m.put("storeUuid", storeUuid);
        m.put("generation", generation);
        m.put("self", self);
        List<Object> list = new ArrayList<>();
        for (Member x : members) {
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("uuid", x.uuid);
            o.put("poolBytes", x.poolBytes);
            o.put("alignment", x.alignment);
            o.put("lastPath", x.lastPath);
            o.put("highWater", x.highWater);
            list.add(o);
        }
        m.put("members", list);
        return CheckedJson.encode(m);
    }

    static StoreRecord decode(byte[] bytes) throws IOException {
        Map<String, Object> m = CheckedJson.decode(bytes, true);
        long format = CheckedJson.number(m, "format", 1, Integer.MAX_VALUE);
        if (format != FORMAT) {
            throw new IOException("format " + format + " is not supported (this version reads " + FORMAT + ")");
        }
        String store = CheckedJson.string(m, "storeUuid");
        long generation = CheckedJson.number(m, "generation", 0, Long.MAX_VALUE);
        String self = CheckedJson.string(m, "self");
        List<Member> members = new ArrayList<>();
        for (Object o : CheckedJson.list(m, "members")) {
            Map<String, Object> x = CheckedJson.object(o, "a member");
            long pool = CheckedJson.number(x, "poolBytes", 1, Long.MAX_VALUE);
            members.add(new Member(CheckedJson.string(x, "uuid"), pool,
                    (int) CheckedJson.number(x, "alignment", 512, 1 << 20), CheckedJson.string(x, "lastPath"),
                    CheckedJson.number(x, "highWater", 0, pool)));
        }
        if (members.isEmpty() || members.stream().map(Member::uuid).distinct().count() != members.size()) {
            throw new IOException("members are empty or repeat a device");
        }
        StoreRecord r = new StoreRecord(store, generation, self, List.copyOf(members));
        if (r.member(self) == null) {
            throw new IOException("self " + self + " is not among the members");
        }
        return r;
    }
}

package io.kvoffload.internal.storage;

import io.kvoffload.KvShape;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * One kind of strategy layout section a manifest layer may hold: its name, the versions this build
 * reads, its writer and its reader (each kind a subclass with one instance, its codec), the way a
 * Lucene codec names and versions each of its formats.
 * Each layout contributes its kind ({@link ClusterSection#KIND}, {@link GroupSection#KIND},
 * {@link UnitSection#KIND}) to {@link LayoutSections}; {@link ManifestCodec} frames, orders and
 * checks sections through these kinds and names no strategy.
 *
 * @param <L> the layout this section stores
 */
abstract class SectionKind<L extends SegmentedLayout> {

    /**
     * Which layouts exclude one another on a layer: a layer holds at most one section per slot (one
     * layout of its entries, clusters or groups, and one auxiliary layout beside it).
     */
    enum Slot { ENTRIES, AUXILIARY }

    /** Where a section body is read: the layer and what the manifest says before the sections. */
    record Context(int layer, KvShape shape, int tokens, int devices) {}

    /**
     * What names a kind and where it may stand.
     *
     * @param name the section's name in a version-6 manifest
     * @param noun the layout's noun in messages ("cluster", "group", "unit")
     * @param minVersion the oldest section version this build reads
     * @param stripedVersion the newest version without head groups: what a token-striped layout is
     *     written as, so stores that never shard stay readable by builds before head sharding
     * @param version the newest section version this build reads and writes; it holds head groups
     * @param flaggedSince the first manifest version (2..5) whose per-layer flag format (before named
     *     sections) carries this kind, or 0 for a kind that only exists as a named section
     */
    record Info(String name, String noun, Slot slot, int minVersion, int stripedVersion, int version, int flaggedSince) {}

    private final Info info;

    SectionKind(Info info) {
        this.info = info;
    }

    final Info info() {
        return info;
    }

    /** The section version {@code layout} is written in: the newest when it is head-sharded, else the striped one. */
    final int versionFor(L layout) {
        return layout.shards() > 1 ? info.version() : info.stripedVersion();
    }

    /** The section version of this kind's bodies in the flag format of {@code manifestVersion}. */
    int flaggedVersion(int manifestVersion) {
        return info.version();
    }

    /** The manifest's layouts of this kind, one per layer (null where a layer has none). */
    abstract L[] layouts(Manifest m);

    /**
     * Writes {@code layout}'s body in section {@code version}; a head-sharded layout is refused in a
     * version before head groups (a flag-format manifest) before anything is written.
     */
    final void encode(DataOutputStream out, L layout, int version) throws IOException {
        if (layout.shards() > 1 && version < info.version()) {
            throw new IllegalStateException("a head-sharded " + info.noun() + " layout needs section version "
                    + info.version() + "; this manifest format writes " + version + " (a sequence from a manifest"
                    + " before version 6 cannot be laid out head-sharded)");
        }
        write(out, layout, version);
    }

    /** Writes the body; {@link #encode} has checked the version holds the layout. */
    abstract void write(DataOutputStream out, L layout, int version) throws IOException;

    /** Reads one body of section version {@code version}; every count is checked against the bytes left. */
    abstract L read(ByteBuffer body, Context at, int version);

    /** Tokens {@code [0, n)} of the layer that {@code layout} holds instead of its blocks; 0 for none. */
    int relaidTokens(L layout) {
        return 0;
    }

    /** The byte stride of {@code layout}'s units that device alignment applies to; 0 for none. */
    int stride(L layout) {
        return 0;
    }

    /** What names {@code layout} in a refusal (a unit layout's owner, for one); empty for nothing. */
    String label(L layout) {
        return "";
    }
}

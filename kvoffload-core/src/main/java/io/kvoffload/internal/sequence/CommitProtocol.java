package io.kvoffload.internal.sequence;

import io.kvoffload.KvIoException;
import io.kvoffload.KvShape;
import io.kvoffload.internal.obs.CommitEvent;
import io.kvoffload.internal.obs.Flight;
import io.kvoffload.internal.storage.BlockTable;
import io.kvoffload.internal.storage.ClusterLayout;
import io.kvoffload.internal.storage.EntryChecksum;
import io.kvoffload.internal.storage.GroupLayout;
import io.kvoffload.internal.storage.UnitLayout;
import io.kvoffload.internal.storage.Manifest;
import io.kvoffload.internal.storage.Store;
import java.io.IOException;
import java.util.Arrays;

/**
 * How a sequence handle commits: it checks that every layer holds KV for every token, writes the
 * partial last blocks, syncs the devices written since the last commit, and hands a new
 * {@link Manifest} to the store, which makes it durable atomically and frees the superseded
 * extents. Only then is the handle's state marked committed: a failure at any step leaves the
 * previous commit the durable state.
 */
public final class CommitProtocol {
    private final Store store;
    private final ExtentLedger ledger;
    private final BlockWriter writer;
    private final String id;
    private final KvShape shape;
    private final int blockTokens;
    private final EntryChecksum checksum;
    private boolean committed;
    private long commitNumber;

    /**
     * @param last the sequence's last commit, or null if it has none yet (its commits are then
     *     numbered past any earlier sequence of the same id, {@link Store#numberingBase})
     */
    public CommitProtocol(Store store, ExtentLedger ledger, BlockWriter writer, String id, KvShape shape,
            int blockTokens, EntryChecksum checksum, Manifest last) {
        this.committed = last != null;
        this.commitNumber = last == null ? store.numberingBase(id) : last.commitNumber();
        this.store = store;
        this.ledger = ledger;
        this.writer = writer;
        this.id = id;
        this.shape = shape;
        this.blockTokens = blockTokens;
        this.checksum = checksum;
    }

    /** Whether the sequence has a commit (an earlier handle's or this one's). */
    public boolean committed() {
        return committed;
    }

    /**
     * Commits {@code tokens} and every layer's KV for them as the next commit number.
     *
     * @param dirty whether anything changed since the last commit
     * @throws IllegalStateException if nothing changed, a layer lacks KV for some token, or there are no tokens
     * @throws KvIoException if a write, sync or the manifest write fails (the previous commit stays durable)
     */
    public void commit(TokenIds tokens, boolean dirty) {
        int tokenCount = tokens.count();
        if (!dirty) {
            throw new IllegalStateException("sequence " + id + " has nothing to commit: it was already committed at "
                    + tokenCount + " tokens and nothing was appended since");
        }
        for (int l = 0; l < ledger.layerCount(); l++) {
            int held = ledger.layer(l).tokens;
            if (held != tokenCount) {
                throw new IllegalStateException("cannot commit sequence " + id + ": layer " + l + " holds KV for "
                        + held + " of " + tokenCount + " tokens; append every layer's KV first");
            }
        }
        if (tokenCount == 0) {
            throw new IllegalStateException("cannot commit sequence " + id + ": it holds no tokens");
        }
        String failed = "commit of sequence " + id + " failed; its previous commit is intact";
        CommitEvent event = Flight.commitStarted();
        long stored = -1;
        try {
            writer.sealPartialTails();
            writer.flush();
            writer.syncWrittenDevices();
            Manifest m = manifest(tokens.array(), tokenCount, commitNumber + 1);
            store.commit(m, ledger.superseded());
            stored = m.storedBytes();
        } catch (IOException e) {
            throw KvIoException.of(failed, e);
        } catch (KvIoException e) {
            throw e.during(failed);
        } finally {
            Flight.committed(event, id, commitNumber + 1, tokenCount, Math.max(0, stored), stored >= 0);
        }
        commitNumber++;
        committed = true;
        ledger.markCommitted();
        writer.markCommitted();
    }

    private Manifest manifest(int[] tokenIds, int tokenCount, long number) {
        int layers = ledger.layerCount();
        BlockTable[] snapshot = new BlockTable[layers];
        ClusterLayout[] clusters = new ClusterLayout[layers];
        GroupLayout[] groups = new GroupLayout[layers];
        UnitLayout[] units = new UnitLayout[layers];
        for (int l = 0; l < layers; l++) {
            LayerState s = ledger.layer(l);
            snapshot[l] = s.blocks.copy();
            snapshot[l].markAllCommitted();
            clusters[l] = s.clusters;
            groups[l] = s.groups;
            units[l] = s.units;
        }
        return new Manifest(id, shape, blockTokens, store.deviceUuids(), Arrays.copyOf(tokenIds, tokenCount), snapshot,
                clusters, groups, units, System.currentTimeMillis(), number, checksum.salted());
    }
}

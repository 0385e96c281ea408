package io.kvoffload;

/**
 * The shared remote tier as an engine sees it ({@link KvStats#remote()}).
 *
 * @param configured whether the configuration names a remote tier
 * @param connected whether the engine reached it at open; when false (and configured) the engine
 *     runs on its local tiers alone and {@code reason} says why
 * @param description what it is connected to, or why not (never credentials)
 * @param blocksPublished blocks this engine stored remotely (every layer and the block record)
 * @param blocksAlreadyPresent blocks not published because the tier already held them
 * @param bytesPublished payload bytes this engine stored remotely
 * @param publishFailures sequences whose publishing failed part way (nothing of the failed block is
 *     visible to readers; see docs/remote.md)
 * @param publishesDropped commits not published because the publish queue was full or the budget spent
 * @param blocksFetched blocks pulled from the tier into the local store
 * @param bytesFetched payload bytes pulled
 * @param fetchFailures remote lookups or pulls cut short by an error of the tier (the prefix ends there)
 * @param checksumFailures remote blobs that failed verification (treated as misses and deleted)
 */
public record RemoteStatus(boolean configured, boolean connected, String description, long blocksPublished,
        long blocksAlreadyPresent, long bytesPublished, long publishFailures, long publishesDropped,
        long blocksFetched, long bytesFetched, long fetchFailures, long checksumFailures) {

    static RemoteStatus none() {
        return new RemoteStatus(false, false, "no remote tier configured", 0, 0, 0, 0, 0, 0, 0, 0, 0);
    }
}

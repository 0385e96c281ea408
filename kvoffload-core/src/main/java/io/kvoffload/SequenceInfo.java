package io.kvoffload;

/**
 * A committed sequence as the engine lists it.
 *
 * @param id the sequence id
 * @param shape its model shape
 * @param tokenCount tokens committed (every layer holds KV for all of them)
 * @param storedBytes bytes of extents it occupies across devices
 * @param commitNumber its commit number: one more with each commit; a sequence created under the id
 *     of a deleted one numbers its commits past the deleted one's where the store still knows them
 * @param commitMillis wall-clock time of the last commit
 * @param openHandles handles currently holding it (a held sequence is never evicted)
 */
public record SequenceInfo(String id, KvShape shape, int tokenCount, long storedBytes, long commitNumber,
        long commitMillis, int openHandles) {}

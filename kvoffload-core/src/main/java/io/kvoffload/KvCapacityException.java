package io.kvoffload;

/**
 * A device pool is full and no committed sequence could be evicted to make room (all are open).
 * Nothing committed was lost; the write that needed the space did not happen.
 */
public class KvCapacityException extends KvException {
    public KvCapacityException(String message) {
        super(message);
    }
}

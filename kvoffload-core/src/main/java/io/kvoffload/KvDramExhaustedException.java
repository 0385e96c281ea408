package io.kvoffload;

/** The DRAM tier's hard budget is spent: every slot is in use. */
public class KvDramExhaustedException extends KvException {
    public KvDramExhaustedException(String message) {
        super(message);
    }
}

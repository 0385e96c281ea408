package io.kvoffload;

import java.nio.file.Path;

/**
 * Another engine, in this process or another, has the store open. Two engines on the same
 * directories would hand out the same space twice, so the second one is refused.
 */
public class KvStoreLockedException extends KvException {
    private final Path directory;

    public KvStoreLockedException(Path directory, String holder) {
        super("the store directory " + directory + " is in use by " + holder
                + "; close that engine first (one engine per store; share its KvEngine between threads instead)");
        this.directory = directory;
    }

    /** The directory whose lock is held. */
    public Path directory() {
        return directory;
    }
}

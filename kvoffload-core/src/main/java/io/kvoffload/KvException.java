package io.kvoffload;

/** Base class of the library's runtime failures that are not argument or state errors. */
public class KvException extends RuntimeException {
    public KvException(String message) {
        super(message);
    }

    public KvException(String message, Throwable cause) {
        super(message, cause);
    }
}

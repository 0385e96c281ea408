package io.kvoffload;

/**
 * The configured directories do not form one store: directories of different stores are mixed, or
 * two directories claim to be the same device (a copied directory). Nothing was opened or changed.
 */
public class KvStoreMismatchException extends KvException {
    public KvStoreMismatchException(String message) {
        super(message);
    }
}

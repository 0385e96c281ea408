package io.kvoffload.iouring.bindings;

/**
 * Whether liburing can be used from this JVM, found without throwing: the pattern Lucene uses for
 * its native access (try to link once, remember why it failed, fall back).
 */
public final class Liburing {
    private Liburing() {}

    private static final class Holder {
        static final String REASON = load();

        private static String load() {
            if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).startsWith("linux")) {
                return "io_uring needs Linux; this is " + System.getProperty("os.name");
            }
            try {
                // Initialising the header class opens liburing.so.2 and resolves one symbol.
                liburing_h.io_uring_submit$handle();
                return null;
            } catch (IllegalCallerException e) {
                return "native access is not enabled: run with --enable-native-access=io.kvoffload.iouring"
                        + " (or ALL-UNNAMED on the class path)";
            } catch (ExceptionInInitializerError | NoClassDefFoundError e) {
                Throwable c = e.getCause() != null ? e.getCause() : e;
                if (c instanceof IllegalCallerException) {
                    return "native access is not enabled: run with --enable-native-access=io.kvoffload.iouring"
                            + " (or ALL-UNNAMED on the class path)";
                }
                return "liburing2 is not installed: apt-get install liburing2 (" + c.getMessage() + ")";
            } catch (RuntimeException | LinkageError e) {
                return "liburing2 is not installed: apt-get install liburing2 (" + e + ")";
            }
        }
    }

    /** Null when {@code liburing.so.2} is loaded and linkable, else why not (with what to install). */
    public static String unavailableReason() {
        return Holder.REASON;
    }
}

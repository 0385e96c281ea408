package io.kvoffload.spi;

/**
 * Whether a backend can run on this machine, and if not, why (what is missing and what to install).
 *
 * @param available true when the backend can be opened
 * @param reason a human-readable reason; never null
 */
public record Availability(boolean available, String reason) {
    public static Availability yes(String detail) {
        return new Availability(true, detail);
    }

    public static Availability no(String reason) {
        return new Availability(false, reason);
    }
}

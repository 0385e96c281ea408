package io.kvoffload;

/**
 * A device the request needs is missing from the configuration or has failed (its pool file
 * vanished, its records cannot be trusted, its I/O keeps failing). Nothing was read from or
 * committed to it; sequences entirely on healthy devices keep working, and the engine's
 * {@link KvStats#unavailableDevices()} says which devices are out and why.
 */
public class KvDeviceUnavailableException extends KvException {
    private final String deviceUuid;

    public KvDeviceUnavailableException(String deviceUuid, String message) {
        super(message);
        this.deviceUuid = deviceUuid;
    }

    /** The device's UUID, or null when the failure concerns no single device. */
    public String deviceUuid() {
        return deviceUuid;
    }
}

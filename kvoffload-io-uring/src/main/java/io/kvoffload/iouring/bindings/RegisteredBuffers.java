package io.kvoffload.iouring.bindings;

/**
 * What the kernel holds in each fixed-buffer slot of one ring, as far as this process registered it:
 * the address range per index. The bindings consult it before queueing a READ_FIXED/WRITE_FIXED so
 * a transfer can never name memory outside the registered buffer, whatever the caller computed.
 */
final class RegisteredBuffers {
    private final long[] base;
    private final long[] length;

    RegisteredBuffers(int slots) {
        base = new long[slots];
        length = new long[slots];
    }

    int slots() {
        return base.length;
    }

    void set(int index, long address, long bytes) {
        base[index] = address;
        length[index] = bytes;
    }

    void clear(int index) {
        base[index] = 0;
        length[index] = 0;
    }

    void clearAll() {
        java.util.Arrays.fill(base, 0);
        java.util.Arrays.fill(length, 0);
    }

    boolean isSet(int index) {
        return length[index] != 0;
    }

    void checkInside(int index, long address, int bytes) {
        if (index < 0 || index >= base.length) {
            throw new IllegalArgumentException(
                    "bufIndex = " + index + " is out of range; allowed: 0.." + (base.length - 1));
        }
        long b = base[index];
        long n = length[index];
        if (n == 0) {
            throw new IllegalArgumentException("bufIndex = " + index + " names no registered buffer");
        }
        if (address < b || bytes > n || address - b > n - bytes) {
            throw new IllegalArgumentException("transfer of " + bytes + " bytes at 0x" + Long.toHexString(address)
                    + " is outside registered buffer " + index + " (0x" + Long.toHexString(b) + ", " + n + " bytes)");
        }
    }
}

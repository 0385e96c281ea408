package io.kvoffload.cuda.bindings;

import jcuda.driver.CUdeviceptr;

/** A {@link CUdeviceptr} whose address can be read (JCuda keeps it protected). */
final class DevicePtr extends CUdeviceptr {
    DevicePtr() {}

    private DevicePtr(DevicePtr base, long byteOffset) {
        super(base, byteOffset);
    }

    /** The address this pointer stands for, offset included. */
    long address() {
        return getNativePointer() + getByteOffset();
    }

    DevicePtr at(long byteOffset) {
        return new DevicePtr(this, byteOffset);
    }
}

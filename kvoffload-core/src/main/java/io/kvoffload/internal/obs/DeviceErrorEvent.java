package io.kvoffload.internal.obs;

import jdk.jfr.Category;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** A device marked failed: it serves nothing more until the engine is reopened. */
@Name("io.kvoffload.DeviceError")
@Label("KV Device Error")
@Category({"kvoffload", "Storage"})
public final class DeviceErrorEvent extends jdk.jfr.Event {
    @Label("Device")
    public int device;

    @Label("Device UUID")
    public String uuid;

    @Label("Directory")
    public String directory;

    @Label("Reason")
    public String reason;
}

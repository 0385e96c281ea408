/**
 * kvoffload's GPU tier over CUDA (JCuda). Adding this module (or jar) gives an engine an HBM tier
 * without code changes wherever a GPU works; it is found through
 * {@link io.kvoffload.spi.DeviceTierProvider}.
 */
module io.kvoffload.cuda {
    requires transitive io.kvoffload.core;
    requires org.slf4j;
    requires transitive jcuda; // automatic module (jcuda-12.6.0.jar has no Automatic-Module-Name)

    exports io.kvoffload.cuda;
    exports io.kvoffload.cuda.bindings;

    provides io.kvoffload.spi.DeviceTierProvider with io.kvoffload.cuda.CudaDeviceTierProvider;
}
